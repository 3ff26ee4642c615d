// The studio `routepack-studio`. Everything lives in routepack_views (views/studio_app.h):
// this file only hands over the command line.
#include "views/studio_app.h"

int main(int argc, char** argv) {
    return routepack::views::runStudio(argc, argv);
}
