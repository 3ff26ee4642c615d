#include "views/studio_status.h"

#include "views/plan/panel_util.h"

#include <QDialog>
#include <QDialogButtonBox>
#include <QLabel>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QStatusBar>
#include <QTextCursor>
#include <QTime>
#include <QToolButton>
#include <QVBoxLayout>

namespace routepack::views {

StudioStatus::StudioStatus(QStatusBar* bar)
    : QObject(bar), line_(new ElidedLabel(bar)), progress_(new QProgressBar(bar)), cancel_(new QToolButton(bar)),
      library_(new QLabel(bar)) {
    setObjectName(QStringLiteral("studioStatus"));
    // A long message never widens the window past the screen: the line takes the width there is,
    // elided at its end, and its tooltip and View > Status messages hold the whole message.
    line_->setObjectName(QStringLiteral("statusLine"));
    line_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    progress_->setMaximumWidth(220);
    progress_->setTextVisible(false);
    progress_->hide();
    cancel_->setObjectName(QStringLiteral("cancelJob"));
    cancel_->setText(tr("Cancel"));
    cancel_->setToolTip(tr("Cancel the running job (Esc); the planner keeps its best valid plan so far"));
    cancel_->setEnabled(false);
    bar->addWidget(line_, 1);
    bar->addPermanentWidget(progress_);
    bar->addPermanentWidget(cancel_);
    bar->addPermanentWidget(library_);
    connect(cancel_, &QToolButton::clicked, this, &StudioStatus::cancelRequested);
}

void StudioStatus::set(const QString& text, bool error) {
    error_ = error && !text.isEmpty();
    line_->setFullText(text);
    if (!text.isEmpty() && (log_.isEmpty() || !log_.back().endsWith(text))) {
        log_ << QStringLiteral("%1  %2%3")
                    .arg(QTime::currentTime().toString(QStringLiteral("HH:mm:ss")), error ? tr("error: ") : QString(),
                         text);
        if (log_.size() > kLogSize) log_.removeFirst();
        if (logText_) logText_->setPlainText(log_.join(QLatin1Char('\n')));
    }
    line_->setStyleSheet(error ? QStringLiteral("color: white; background-color: #b3261e; padding: 1px 4px;")
                               : QString());
}

QString StudioStatus::text() const {
    return line_->fullText();
}

QDialog* StudioStatus::showLog(QWidget* parent) {
    if (!logDialog_) {
        logDialog_ = new QDialog(parent);
        logDialog_->setWindowTitle(tr("Status messages — RoutePack Studio"));
        auto* layout = new QVBoxLayout(logDialog_);
        logText_ = new QPlainTextEdit(logDialog_);
        logText_->setObjectName(QStringLiteral("statusLogText"));
        logText_->setReadOnly(true);
        logText_->setLineWrapMode(QPlainTextEdit::WidgetWidth);
        layout->addWidget(logText_);
        auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, logDialog_);
        connect(buttons, &QDialogButtonBox::rejected, logDialog_, &QDialog::close);
        layout->addWidget(buttons);
        logDialog_->resize(760, 420);
    }
    logText_->setPlainText(log_.join(QLatin1Char('\n')));
    logText_->moveCursor(QTextCursor::End);
    logDialog_->show();
    logDialog_->raise();
    return logDialog_;
}

void StudioStatus::setLibrary(const QString& name, const QString& path, bool readOnly) {
    library_->setText(name + (readOnly ? tr(" (read-only)") : QString()));
    library_->setToolTip(path);
}

void StudioStatus::jobStarted() {
    progress_->setRange(0, 1000);
    progress_->setValue(0);
    progress_->show();
    cancel_->setEnabled(true);
}

void StudioStatus::setProgress(int permille) {
    progress_->setValue(permille);
}

void StudioStatus::jobsIdle() {
    progress_->hide();
    cancel_->setEnabled(false);
}

void StudioStatus::setBusy(bool busy, bool jobsBusy) {
    if (busy) {
        progress_->setRange(0, 0);
        progress_->show();
        return;
    }
    progress_->setRange(0, 1000);
    if (!jobsBusy) progress_->hide();
}

} // namespace routepack::views
