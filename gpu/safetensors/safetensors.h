#pragma once
// safetensors reader and writer of our own. Qt-free.
//
// Format (huggingface/safetensors): u64 LE header length N, N bytes of UTF-8 JSON header, then the data
// buffer. The reader validates as the reference reader (`SafeTensors::read_metadata` +
// `Metadata::validate`, safetensors 24b0b28) does; every refusal is a routepack::InputError whose message is
//   "<file>: <ReferenceErrorKind>: <field>: <detail>"
// so it names the file, the reference error kind (or ours: IoError, NotFound, DuplicateTensor) and the field.
//
// Documented deviation: a tensor name that appears twice in the header is refused
// ("DuplicateTensor"), as the safetensors README requires, although the reference reader silently keeps
// the last entry. A repeated key inside `__metadata__` keeps the last value, as the reference does.
//
// The writer reproduces the reference writer's bytes: tensors sorted by dtype (enum order) descending
// then by name (byte order), packed from offset 0; compact JSON with `__metadata__` first (keys in
// byte order; the reference uses a hash map, so its order is unspecified for more than one key), then
// the tensors in offset order with fields dtype, shape, data_offsets; header padded with spaces to a
// multiple of 8. `__metadata__` is written only when the map is non-empty.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace routepack::gpu {

/// The reference `Dtype` enum, in its order (= increasing alignment; the writer sorts by it).
enum class Dtype : std::uint8_t {
    BOOL,
    F4,
    F6_E2M3,
    F6_E3M2,
    U8,
    I8,
    F8_E5M2,
    F8_E4M3,
    F8_E8M0,
    F8_E4M3FNUZ,
    F8_E5M2FNUZ,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
};

std::string_view dtype_name(Dtype d);
/// Case-sensitive, as the reference: "i32" and "F8_E4M3FN" are unknown.
std::optional<Dtype> parse_dtype(std::string_view name);
unsigned dtype_bits(Dtype d);

using SafetensorsMetadata = std::map<std::string, std::string>;

struct TensorInfo {
    std::string name;
    Dtype dtype = Dtype::U8;
    std::vector<std::uint64_t> shape;
    std::uint64_t data_begin = 0; ///< data_offsets[0], relative to the data buffer
    std::uint64_t data_end = 0;   ///< data_offsets[1]
    std::uint64_t nbytes() const { return data_end - data_begin; }
};

/// A validated, read-only memory-mapped safetensors file. Move-only.
class SafetensorsFile {
public:
    /// Maps and validates; throws InputError naming the file and the field on any malformed input.
    static SafetensorsFile open(const std::filesystem::path& path);

    SafetensorsFile(SafetensorsFile&& other) noexcept;
    SafetensorsFile& operator=(SafetensorsFile&& other) noexcept;
    SafetensorsFile(const SafetensorsFile&) = delete;
    SafetensorsFile& operator=(const SafetensorsFile&) = delete;
    ~SafetensorsFile();

    const std::filesystem::path& path() const { return path_; }
    std::uint64_t header_size() const { return header_size_; }
    std::uint64_t file_size() const { return size_; }

    /// Tensor names in file order (by data offset; ties keep header order).
    std::vector<std::string> names() const;
    /// Tensors in file order.
    const std::vector<TensorInfo>& tensors() const { return tensors_; }
    bool contains(const std::string& name) const { return index_.count(name) != 0; }
    /// Throws InputError when the file has no such tensor.
    const TensorInfo& info(const std::string& name) const;
    /// The tensor's bytes inside the mapping (valid while this object lives). Never assume alignment.
    std::span<const std::byte> data(const std::string& name) const;
    std::span<const std::byte> data(const TensorInfo& tensor) const;
    /// `__metadata__` (empty when absent or null).
    const SafetensorsMetadata& metadata() const { return metadata_; }
    bool has_metadata() const { return has_metadata_; }

private:
    SafetensorsFile() = default;
    void release() noexcept;

    std::filesystem::path path_;
    const std::byte* map_ = nullptr;
    std::uint64_t size_ = 0;
    std::uint64_t header_size_ = 0;
    std::vector<TensorInfo> tensors_;
    std::unordered_map<std::string, std::size_t> index_;
    SafetensorsMetadata metadata_;
    bool has_metadata_ = false;
};

/// One tensor to write: its bytes must be exactly product(shape) * dtype bits / 8.
struct TensorData {
    std::string name;
    Dtype dtype = Dtype::U8;
    std::vector<std::uint64_t> shape;
    std::span<const std::byte> data;
};

/// The exact bytes the reference writer produces for these tensors and metadata.
/// Throws InputError on a duplicate name, a size mismatch or a sub-byte size.
std::string serialize_safetensors(const std::vector<TensorData>& tensors, const SafetensorsMetadata& metadata);

/// Writes serialize_safetensors() to a temporary file beside `path`, then renames it over `path`
/// (atomic; a mapped old file stays valid). Throws InputError naming the file on I/O failure.
void write_safetensors(const std::filesystem::path& path, const std::vector<TensorData>& tensors,
                       const SafetensorsMetadata& metadata);

/// model.safetensors.index.json of a sharded checkpoint.
struct CheckpointIndex {
    std::filesystem::path dir;
    /// "metadata" values: strings as they are, other JSON values as compact JSON text.
    std::map<std::string, std::string> metadata;
    std::optional<std::uint64_t> total_size;       ///< metadata.total_size when an unsigned integer
    std::map<std::string, std::string> weight_map; ///< tensor name -> shard file name (in `dir`)
    /// Distinct shard file names, sorted.
    std::vector<std::string> shards() const;
};

/// Parses dir/model.safetensors.index.json; throws InputError naming the file and field.
CheckpointIndex read_index(const std::filesystem::path& dir);

} // namespace routepack::gpu
