#pragma once
// Tables and widgets to files: the CSV of a model and the PNG / SVG of a painted widget, written
// atomically. Every export of the studio (File > Export, the context menus' Save image..., the
// plan and run views' charts) goes through these two.
#include <QString>

#include <string>

class QAbstractItemModel;
class QWidget;

namespace routepack::views {

/// Writes `model`'s top-level table as CSV (RFC 4180: comma separator, CRLF line ends, fields with
/// comma, quote, CR or LF quoted with doubled quotes): a header row of the horizontal headers, then
/// one line per row of raw values (RawValueRole when valid, else Qt::EditRole; an invalid value is
/// an empty field); doubles in the shortest form that reads back to the same double. Atomic
/// (QSaveFile). False with `error` set on a write failure.
bool exportModelCsv(const QAbstractItemModel& model, const QString& file, QString* error = nullptr);

/// Writes `text` and one final "\n" to `file` through QSaveFile (a temporary beside it, renamed into
/// place on commit: a failed write leaves an existing file as it was). False with `error` =
/// "<file>: cannot write (<reason>)" when it cannot be opened, "<file>: write failed (<reason>)" when
/// writing or the rename fails.
bool writeTextFile(const QString& file, const std::string& text, QString* error);

/// Renders `widget` to `file` by suffix: ".png" = QWidget::grab() at the widget's device pixel
/// ratio (so 2x on a 200% screen); ".svg" = QSvgGenerator of the widget's logical size, via
/// QWidget::render. False with `error` set for a null widget, another suffix or a write failure.
bool exportWidgetImage(QWidget* widget, const QString& file, QString* error = nullptr);

} // namespace routepack::views
