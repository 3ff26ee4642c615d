// The studio `routepack-studio` (issue 4). Everything lives in routepack_views (views/studio_app.h):
// this file only hands over the command line.
#include "views/studio_app.h"

int main(int argc, char** argv) {
    return routepack::views::runStudio(argc, argv);
}
