// Qt models of the studio, checked by QAbstractItemModelTester on real library files.
#include "core/synth/synth.h"
#include "storage/library.h"
#include "tests/testutil.h"
#include "views/trace_list_model.h"

#include <QAbstractItemModelTester>
#include <QtTest>

using namespace routepack;

class TestViews : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void traceListModel() {
        const auto tmp = test::temp_dir(QStringLiteral("views"));
        SynthConfig c;
        c.groups = 2;
        c.group_size = 3;
        write_synth(c, TraceFormat::VLLM, tmp / "syn");
        {
            auto lib = storage::Library::open(tmp / "lib.routepack");
            ImportOptions o;
            o.model = synth_model(c);
            lib->import_trace("syn", {tmp / "syn"}, o);
        }
        views::TraceListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(model.openLibrary(QString::fromStdString((tmp / "lib.routepack").string())));
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.columnCount(), int(views::TraceListModel::ColumnCount));
        QCOMPARE(model.index(0, views::TraceListModel::Name).data().toString(), QStringLiteral("syn"));
        QCOMPARE(model.index(0, views::TraceListModel::Samples).data().toInt(), 6);
        QCOMPARE(model.index(0, views::TraceListModel::MoeLayers).data().toInt(),
                 c.num_hidden_layers - c.first_dense_layers);
        QCOMPARE(model.index(0, views::TraceListModel::Experts).data().toInt(), c.experts);
        QCOMPARE(model.headerData(0, Qt::Horizontal).toString(), QStringLiteral("Trace"));

        // A file that is not a library: the model empties and says why.
        test::write_file(tmp / "junk.routepack", std::string(2048, 'j'));
        QVERIFY(!model.openLibrary(QString::fromStdString((tmp / "junk.routepack").string())));
        QCOMPARE(model.rowCount(), 0);
        QCOMPARE(model.errorString(), QString::fromStdString((tmp / "junk.routepack").string()) +
                                          QStringLiteral(": not a RoutePack library (file is not an SQLite database)"));
    }
};

QTEST_MAIN(TestViews)
#include "tst_views.moc"
