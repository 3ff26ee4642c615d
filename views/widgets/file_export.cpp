#include "views/widgets/file_export.h"

#include "views/widgets/roles.h"

#include <QAbstractItemModel>
#include <QFileInfo>
#include <QLocale>
#include <QPainter>
#include <QPixmap>
#include <QSaveFile>
#include <QSvgGenerator>
#include <QWidget>

#include <charconv>
#include <cmath>

namespace routepack::views {

namespace {

void setError(QString* error, const QString& text) {
    if (error) *error = text;
}

/// One CSV field (RFC 4180): quoted when it holds a comma, quote, CR or LF; quotes doubled.
QString csvField(const QString& s) {
    if (!s.contains(QLatin1Char(',')) && !s.contains(QLatin1Char('"')) && !s.contains(QLatin1Char('\n')) &&
        !s.contains(QLatin1Char('\r')))
        return s;
    QString out = s;
    out.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + out + QLatin1Char('"');
}

/// Raw value as CSV text: doubles in the shortest form that reads back to the same double.
QString csvValue(const QVariant& v) {
    if (!v.isValid()) return {};
    switch (v.typeId()) {
    case QMetaType::Double:
    case QMetaType::Float: {
        const double d = v.toDouble();
        if (std::isnan(d)) return {};
        return QString::number(d, 'g', QLocale::FloatingPointShortest);
    }
    case QMetaType::Bool:
        return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    default:
        return v.toString();
    }
}

} // namespace

bool exportModelCsv(const QAbstractItemModel& model, const QString& file, QString* error) {
    QSaveFile out(file);
    if (!out.open(QIODevice::WriteOnly)) {
        setError(error, QObject::tr("Cannot write %1: %2").arg(file, out.errorString()));
        return false;
    }
    const int rows = model.rowCount(), cols = model.columnCount();
    QString text;
    QStringList fields;
    for (int c = 0; c < cols; ++c)
        fields.append(csvField(model.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString()));
    text += fields.join(QLatin1Char(',')) + QStringLiteral("\r\n");
    for (int r = 0; r < rows; ++r) {
        fields.clear();
        for (int c = 0; c < cols; ++c) {
            const QModelIndex idx = model.index(r, c);
            // Raw role first; models without it export their edit value (QStandardItemModel: the
            // text). An invalid raw value of our models means "no value" and stays empty.
            QVariant v = model.data(idx, RawValueRole);
            if (!v.isValid()) v = model.data(idx, Qt::EditRole);
            fields.append(csvField(csvValue(v)));
        }
        text += fields.join(QLatin1Char(',')) + QStringLiteral("\r\n");
    }
    const QByteArray bytes = text.toUtf8();
    if (out.write(bytes) != bytes.size() || !out.commit()) {
        setError(error, QObject::tr("Cannot write %1: %2").arg(file, out.errorString()));
        return false;
    }
    return true;
}

bool writeTextFile(const QString& file, const std::string& text, QString* error) {
    QSaveFile f(file);
    if (!f.open(QIODevice::WriteOnly)) {
        if (error) *error = QStringLiteral("%1: cannot write (%2)").arg(file, f.errorString());
        return false;
    }
    f.write(text.data(), static_cast<qint64>(text.size()));
    f.write("\n", 1);
    if (!f.commit()) {
        if (error) *error = QStringLiteral("%1: write failed (%2)").arg(file, f.errorString());
        return false;
    }
    return true;
}

bool exportWidgetImage(QWidget* widget, const QString& file, QString* error) {
    if (!widget) {
        setError(error, QObject::tr("Nothing to export"));
        return false;
    }
    const QString suffix = QFileInfo(file).suffix().toLower();
    QSaveFile out(file);
    if (suffix != QStringLiteral("png") && suffix != QStringLiteral("svg")) {
        setError(error, QObject::tr("Cannot export %1: use a .png or .svg file name").arg(file));
        return false;
    }
    if (!out.open(QIODevice::WriteOnly)) {
        setError(error, QObject::tr("Cannot write %1: %2").arg(file, out.errorString()));
        return false;
    }
    if (suffix == QStringLiteral("png")) {
        const QPixmap pm = widget->grab();
        if (pm.isNull() || !pm.save(&out, "PNG")) {
            out.cancelWriting();
            setError(error, QObject::tr("Cannot render %1").arg(file));
            return false;
        }
    } else {
        QSvgGenerator svg;
        svg.setOutputDevice(&out);
        svg.setSize(widget->size());
        svg.setViewBox(QRect(QPoint(0, 0), widget->size()));
        svg.setTitle(widget->windowTitle().isEmpty() ? QFileInfo(file).completeBaseName() : widget->windowTitle());
        svg.setDescription(QStringLiteral("RoutePack Studio"));
        QPainter p;
        if (!p.begin(&svg)) {
            out.cancelWriting();
            setError(error, QObject::tr("Cannot render %1").arg(file));
            return false;
        }
        widget->render(&p);
        p.end();
    }
    if (!out.commit()) {
        setError(error, QObject::tr("Cannot write %1: %2").arg(file, out.errorString()));
        return false;
    }
    return true;
}

} // namespace routepack::views
