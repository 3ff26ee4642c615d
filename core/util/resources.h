#pragma once
// Small JSON resources compiled into the binaries (resources/models/*.json, resources/topologies/*.json).
#include <string>
#include <vector>

namespace routepack {

/// One embedded resource: `name` is the file stem (e.g. "deepseek-v2-lite"), `text` its bytes.
struct EmbeddedResource {
    std::string name;
    std::string text;
};

/// The shipped model descriptions, sorted by name. Generated at build time by resources/embed.cmake.
const std::vector<EmbeddedResource>& embedded_model_descriptions();

/// The shipped example topologies (resources/topologies/*.json), sorted by name.
const std::vector<EmbeddedResource>& embedded_topologies();

} // namespace routepack
