#pragma once
// The one way the program reads a whole input file (topology, plan, model config, id list,
// checkpoint index, rewrite sidecar, trace files): a regular file only (a FIFO, device, socket or
// folder is refused without blocking and unread) of at most a size cap that fits its kind,
// checked before a byte is read.
#include <cstdint>
#include <filesystem>
#include <string>

namespace routepack {

/// What a file is for messages ("topology file", "plan file", ...) and the most bytes such a file
/// may hold.
struct InputFileKind {
    const char* what; ///< "plan file"
    std::uint64_t max_bytes;
    const char* article = "a"; ///< "a" or "an", before `what`
};

/// Size caps per kind. Each is far above what real inputs of that kind hold (a topology is a few
/// hundred bytes, a DeepSeek-V3 checkpoint index about 9 MB, a plan for 100k samples a few MB) and
/// small enough that reading one cannot exhaust memory.
namespace input_files {
inline constexpr InputFileKind kTopology{"topology file", std::uint64_t(1) << 20};                           // 1 MiB
inline constexpr InputFileKind kPlan{"plan file", std::uint64_t(256) << 20};                                 // 256 MiB
inline constexpr InputFileKind kMeasured{"measured step file", std::uint64_t(1) << 30};                      // 1 GiB
inline constexpr InputFileKind kProfilerTrace{"profiler trace (Chrome trace JSON)", std::uint64_t(2) << 30}; // 2 GiB
inline constexpr InputFileKind kModelConfig{"model config (config.json)", std::uint64_t(16) << 20};          // 16 MiB
inline constexpr InputFileKind kIdList{"id list", std::uint64_t(256) << 20, "an"};                           // 256 MiB
inline constexpr InputFileKind kCheckpointIndex{"checkpoint index", std::uint64_t(64) << 20};                // 64 MiB
inline constexpr InputFileKind kRewriteSidecar{"rewrite sidecar", std::uint64_t(64) << 20};                  // 64 MiB
inline constexpr InputFileKind kTraceFile{"trace file", std::uint64_t(16) << 30};                            // 16 GiB
inline constexpr InputFileKind kLoadsFile{"loads file", std::uint64_t(256) << 20};                           // 256 MiB
inline constexpr InputFileKind kExpertMap{"expert map file", std::uint64_t(256) << 20, "an"};                // 256 MiB
/// A previous step's placement: a plan file or an expert map.
inline constexpr InputFileKind kPreviousPlacement{"placement file (plan or expert map)", std::uint64_t(256) << 20};
} // namespace input_files

/// Reads the whole file at `path` as bytes. The file is opened with O_NONBLOCK (so that a FIFO
/// never blocks) and checked with fstat on the open descriptor before anything is read.
/// InputError, naming the path and `kind.what`:
///   "<path>: no such <what>"                                   absent (or a dangling link):
///                                                              MissingFileError
///   "<path>: is a folder, not <article> <what>" (likewise "is a pipe (FIFO)", "is a device",
///                                              "is a socket", "is not a regular file")
///   "<path>: too large for <article> <what>: <n> bytes, the limit is <max> bytes"
///   "<path>: cannot open <what>: <reason>", "<path>: read error: <reason>"
/// A file that grows while it is read is refused as too large once it passes the cap; one that
/// shrinks is returned as read.
std::string read_input_file(const std::filesystem::path& path, const InputFileKind& kind);

/// The regular-file check of read_input_file alone, for files that are mapped or streamed rather
/// than read whole (safetensors shards): the same messages for absent, folder and non-regular
/// paths; returns the file size in bytes. Never blocks (stat, no open).
std::uint64_t check_input_file(const std::filesystem::path& path, const InputFileKind& kind);

} // namespace routepack
