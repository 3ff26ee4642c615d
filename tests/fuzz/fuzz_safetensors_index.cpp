// libFuzzer harness: a sharded checkpoint's model.safetensors.index.json (huggingface/transformers
// sharded-checkpoint index: {"metadata": {...}, "weight_map": {tensor: shard}}) parsed by
// gpu::read_index. Only InputError may come out.
#include "core/util/errors.h"
#include "gpu/safetensors/safetensors.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    (void)routepack::fuzz::write_input("model.safetensors.index.json", data, size);
    try {
        const auto index = routepack::gpu::read_index(routepack::fuzz::scratch_dir());
        (void)index.shards();
    } catch (const routepack::InputError&) {
    }
    return 0;
}
