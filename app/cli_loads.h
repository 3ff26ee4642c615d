#pragma once
// The `routepack place --loads FILE` reader, a library of its own (routepack_cli_loads) so that its
// fuzz harness (tests/fuzz/fuzz_place_loads.cpp) links exactly what the command runs.
#include "core/model/model.h"

#include <cstdint>
#include <string>
#include <vector>

namespace routepack::cli {

/// A loads file read: the [L][E] expert loads (row-major, layer l's experts at l*E..l*E+E-1, in
/// tokens) and the model they describe (E from the rows, top_k 1).
struct LoadsFile {
    std::vector<std::uint64_t> loads;
    ModelDescription model;
};

/// Parses a loads file's text: a JSON [L][E] array of non-negative whole numbers, or an object
/// {"loads": [L][E], "moe_layers": [...] (optional), "num_hidden_layers": N (optional)} and no other
/// field. The model gets E from the rows, moe_layers from the file, else `moe_layers_flag`
/// (--moe-layers text, "" = not given), else 0..L-1; num_hidden_layers from the file, else
/// `layers_flag` (> 0), else the last MoE layer + 1. Every error is an InputError "<path>: <field
/// path> ..." ("loads.json: loads[3][1] must be a non-negative whole number (got -1)"): malformed
/// JSON (a repeated key, a number no double holds) included, an unknown field, a layer whose loads
/// sum above 2^64 - 1 (its rank loads would wrap) and the model's own checks.
LoadsFile parse_loads_text(const std::string& text, const std::string& path, const std::string& moe_layers_flag,
                           int layers_flag);

} // namespace routepack::cli
