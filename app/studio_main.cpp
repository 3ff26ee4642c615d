// The studio. Issue 4 builds the full window; this entry point already opens a library and lists
// its traces so that the GUI, the CLI and the tests share one storage and one core.
#include "views/trace_list_model.h"

#include <QApplication>
#include <QMainWindow>
#include <QTableView>
#include <QHeaderView>

int main(int argc, char** argv) {
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("RoutePack Studio"));
    QMainWindow w;
    auto* view = new QTableView(&w);
    auto* model = new routepack::views::TraceListModel(&w);
    if (argc > 1) model->openLibrary(QString::fromLocal8Bit(argv[1]));
    view->setModel(model);
    view->horizontalHeader()->setStretchLastSection(true);
    w.setCentralWidget(view);
    w.setWindowTitle(QStringLiteral("RoutePack Studio"));
    w.resize(900, 500);
    w.show();
    return app.exec();
}
