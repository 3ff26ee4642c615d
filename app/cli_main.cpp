#include "app/cli.h"

int main(int argc, char** argv) {
    return routepack::cli::run(argc, argv);
}
