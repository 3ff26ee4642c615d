#pragma once
// The CLI's words for a library error, for tests that assert what the command prints. Kept apart from
// testutil.h: tests that name their CLI runner `cli` do not see the routepack::cli namespace.
#include "app/cli_errors.h"
#include "core/util/errors.h"

#include <exception>
#include <string>

namespace routepack::test {

/// The InputError f() throws in the CLI's words (cli::cli_error_text: each setting it names by its
/// flag), or a description of what happened instead.
template <typename F> std::string cli_error_of(F&& f) {
    try {
        f();
    } catch (const InputError& e) {
        return cli::cli_error_text(e);
    } catch (const std::exception& e) {
        return std::string("<other exception: ") + e.what() + ">";
    }
    return "<no exception>";
}

} // namespace routepack::test
