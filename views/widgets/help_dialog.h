#pragma once
// The studio's Help > Guide to the views: a Markdown guide (docs/studio-views.md, embedded) with its
// contents (the guide's headings, a tree) beside the text and a search field that highlights every
// match and steps through them.
#include <QDialog>
#include <QString>
#include <QStringList>

class QLabel;
class QLineEdit;
class QTextBrowser;
class QTreeWidget;

namespace routepack::views {

/// The guide's window (object names: "helpContents" the tree, "helpSearch" the field, "helpMatches"
/// its count, "viewsGuideText" the text). GUI thread only.
class HelpDialog : public QDialog {
    Q_OBJECT
public:
    /// `markdown` rendered by QTextBrowser::setMarkdown; the contents are its headings of level 1-3.
    HelpDialog(const QString& title, const QString& markdown, QWidget* parent = nullptr);

    /// The contents as shown: each heading's text, indented by two spaces per level below the first
    /// ("Plan", "  EP-rank loads"), in document order.
    QStringList contents() const;
    /// Scrolls the text to the heading `heading` (its text, without indent) and puts the cursor there;
    /// false when the guide has no such heading.
    bool showSection(const QString& heading);
    /// The heading the cursor is under (the last heading at or before it; "" before the first).
    QString currentSection() const;
    /// The search field's line: "3 of 7 matches", "1 match", "no match" (empty field: "").
    QString matchText() const;

private:
    /// Highlights every case-insensitive match of the field's text and selects the first at or after
    /// the cursor (the whole text wraps around).
    void searchChanged();
    /// Selects the next (or previous) match, wrapping around.
    void step(bool backward);
    void selectMatch(int index);
    bool eventFilter(QObject* watched, QEvent* event) override;

    QTreeWidget* contents_;
    QLineEdit* search_;
    QLabel* matches_;
    QTextBrowser* text_;
    QList<int> matchStarts_; ///< document positions of the matches
    int current_ = -1;       ///< index into matchStarts_
};

} // namespace routepack::views
