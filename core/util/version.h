#pragma once
// The program's version, written in this one place: CMakeLists.txt reads it for project(VERSION), and
// the CLI's --version, the studio's application version and the Python module's __version__ print it.
namespace routepack {

/// The version, major.minor.patch.
inline constexpr char kVersion[] = "0.1.0";

} // namespace routepack
