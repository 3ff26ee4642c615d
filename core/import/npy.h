#pragma once
// The NumPy .npy container (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html),
// integer arrays only: read by the npy / npz / vLLM / SGLang importers, written by the synthetic
// trace writers and tests.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace routepack::detail {

/// Decoded .npy array (v1/v2/v3 header; integer dtypes |i1 |u1 <i2 <u2 <i4 <u4 <i8 <u8 and
/// big-endian forms; C or Fortran order) converted to int32 in C order; values outside int32
/// become an InputError. `allow_bool` also reads numpy bool '|b1' as 0/1 (masks and validity
/// flags, never routes). `where` names the file/entry in errors.
struct NpyArray {
    std::vector<std::int64_t> shape;
    std::string descr;
    std::vector<std::int32_t> values;
};
NpyArray parse_npy(std::string_view bytes, const std::string& where, bool allow_bool = false);

/// Writes an .npy v1.0 file (C order) holding `values` with `shape`, stored as `descr` (one of the
/// integer descrs above; values must fit). Used by the synthetic writers and tests.
std::string encode_npy(const std::vector<std::int64_t>& shape, const std::vector<std::int32_t>& values,
                       const std::string& descr = "<i4");

} // namespace routepack::detail
