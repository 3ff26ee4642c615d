#include "views/widgets/help_dialog.h"

#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QLineEdit>
#include <QScrollBar>
#include <QSplitter>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace routepack::views {

namespace {

constexpr int kPositionRole = Qt::UserRole + 1;

/// The heading blocks (level 1-3) of `doc` in order, as (level, block).
std::vector<std::pair<int, QTextBlock>> headings(const QTextDocument* doc) {
    std::vector<std::pair<int, QTextBlock>> out;
    for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
        const int level = b.blockFormat().headingLevel();
        if (level >= 1 && level <= 3) out.emplace_back(level, b);
    }
    return out;
}

} // namespace

HelpDialog::HelpDialog(const QString& title, const QString& markdown, QWidget* parent) : QDialog(parent) {
    setWindowTitle(title);
    auto* layout = new QVBoxLayout(this);
    auto* searchRow = new QHBoxLayout();
    search_ = new QLineEdit(this);
    search_->setObjectName(QStringLiteral("helpSearch"));
    search_->setPlaceholderText(tr("Search the guide (Enter: next match, Shift+Enter: previous)"));
    search_->setClearButtonEnabled(true);
    matches_ = new QLabel(this);
    matches_->setObjectName(QStringLiteral("helpMatches"));
    matches_->setMinimumWidth(matches_->fontMetrics().horizontalAdvance(tr("999 of 999 matches")));
    searchRow->addWidget(search_, 1);
    searchRow->addWidget(matches_);
    layout->addLayout(searchRow);

    auto* split = new QSplitter(this);
    contents_ = new QTreeWidget(split);
    contents_->setObjectName(QStringLiteral("helpContents"));
    contents_->setHeaderLabel(tr("Contents"));
    text_ = new QTextBrowser(split);
    text_->setObjectName(QStringLiteral("viewsGuideText"));
    text_->setOpenExternalLinks(true);
    text_->setMarkdown(markdown);
    split->addWidget(contents_);
    split->addWidget(text_);
    split->setStretchFactor(1, 1);
    split->setSizes({250, 610});
    layout->addWidget(split, 1);

    // The contents: level-1 headings at the top, level 2 under the last level 1, level 3 under the
    // last level 2 (a level without a parent goes to the top).
    QTreeWidgetItem* parents[4] = {nullptr, nullptr, nullptr, nullptr};
    for (const auto& [level, block] : headings(text_->document())) {
        QTreeWidgetItem* parent = nullptr;
        for (int l = level - 1; l >= 1 && !parent; --l)
            parent = parents[l];
        auto* item = parent ? new QTreeWidgetItem(parent) : new QTreeWidgetItem(contents_);
        item->setText(0, block.text());
        item->setData(0, kPositionRole, block.position());
        parents[level] = item;
        for (int l = level + 1; l <= 3; ++l)
            parents[l] = nullptr;
    }
    contents_->expandAll();
    connect(contents_, &QTreeWidget::itemActivated, this,
            [this](QTreeWidgetItem* item) { showSection(item->text(0)); });
    connect(contents_, &QTreeWidget::itemClicked, this, [this](QTreeWidgetItem* item) { showSection(item->text(0)); });
    connect(search_, &QLineEdit::textChanged, this, &HelpDialog::searchChanged);
    search_->installEventFilter(this);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);
    layout->addWidget(buttons);
    resize(900, 640);
}

QStringList HelpDialog::contents() const {
    QStringList out;
    for (const auto& [level, block] : headings(text_->document()))
        out << QString(2 * (level - 1), QLatin1Char(' ')) + block.text();
    return out;
}

bool HelpDialog::showSection(const QString& heading) {
    for (const auto& [level, block] : headings(text_->document())) {
        if (block.text() != heading) continue;
        QTextCursor c(block);
        text_->setTextCursor(c);
        // The heading at the top of the view, not merely somewhere in it.
        text_->verticalScrollBar()->setValue(text_->verticalScrollBar()->maximum());
        text_->ensureCursorVisible();
        return true;
    }
    return false;
}

QString HelpDialog::currentSection() const {
    const int at = text_->textCursor().position();
    QString section;
    for (const auto& [level, block] : headings(text_->document()))
        if (block.position() <= at) section = block.text();
    return section;
}

QString HelpDialog::matchText() const {
    if (search_->text().isEmpty()) return {};
    if (matchStarts_.isEmpty()) return tr("no match");
    if (matchStarts_.size() == 1) return tr("1 match");
    return tr("%1 of %2 matches").arg(current_ + 1).arg(matchStarts_.size());
}

void HelpDialog::searchChanged() {
    const QString needle = search_->text();
    matchStarts_.clear();
    current_ = -1;
    QList<QTextEdit::ExtraSelection> marks;
    if (!needle.isEmpty()) {
        QTextCharFormat mark;
        mark.setBackground(QColor(0xff, 0xe0, 0x66));
        mark.setForeground(Qt::black);
        QTextCursor c(text_->document());
        while (true) {
            c = text_->document()->find(needle, c);
            if (c.isNull()) break;
            matchStarts_ << c.selectionStart();
            marks.append({c, mark});
        }
    }
    text_->setExtraSelections(marks);
    if (!matchStarts_.isEmpty()) {
        const int at = text_->textCursor().selectionStart();
        int first = 0;
        while (first < matchStarts_.size() && matchStarts_[first] < at)
            ++first;
        selectMatch(first < matchStarts_.size() ? first : 0);
    }
    matches_->setText(matchText());
}

void HelpDialog::step(bool backward) {
    if (matchStarts_.isEmpty()) return;
    const int n = static_cast<int>(matchStarts_.size());
    selectMatch(((current_ + (backward ? -1 : 1)) % n + n) % n);
    matches_->setText(matchText());
}

void HelpDialog::selectMatch(int index) {
    current_ = index;
    QTextCursor c(text_->document());
    c.setPosition(matchStarts_[index]);
    c.setPosition(matchStarts_[index] + static_cast<int>(search_->text().size()), QTextCursor::KeepAnchor);
    text_->setTextCursor(c);
    text_->ensureCursorVisible();
}

bool HelpDialog::eventFilter(QObject* watched, QEvent* event) {
    if (watched == search_ && event->type() == QEvent::KeyPress) {
        const auto* key = static_cast<QKeyEvent*>(event);
        if (key->key() == Qt::Key_Return || key->key() == Qt::Key_Enter) {
            step(key->modifiers().testFlag(Qt::ShiftModifier));
            return true;
        }
    }
    return QDialog::eventFilter(watched, event);
}

} // namespace routepack::views
