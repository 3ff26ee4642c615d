#pragma once
// The studio's words for the library's errors. An InputError about a setting (core/util/errors.h
// Setting: a planner budget, a window selector, a trace, window or topology name) is worded from its
// key with the label of the studio field that sets it; messages of the import and rewrite code that
// still name CLI flags ("give --model NAME, ...", "--layer-map: ...") are reworded by guiFieldText.
// guiErrorText is the one rendering of an error the studio shows (failed jobs and failed actions alike).
#include "core/util/errors.h"

#include <QString>

#include <exception>

namespace routepack::views {

/// How the studio names `setting`: the label of the field that sets it in double quotes, followed
/// by " = <value>" when the message quotes a value: a planner budget by its budget_table() label
/// ("\"Placement rounds\""), a window selector by its choice in the window dialog
/// ("\"windows of N samples\" = 40"), "\"Trace name\"", "\"Window name\"", "\"Topology name\"".
/// A key it does not know is named by the library's words (Setting::words).
QString guiSettingText(const Setting& setting);

/// The one rendering of an error for the studio: an InputError reworded with guiSettingText, then
/// guiFieldText; std::bad_alloc "out of memory"; anything else its what().
QString guiErrorText(const std::exception& e);

/// `message` with every CLI flag of the import and rewrite code replaced by the studio field that
/// sets the same thing, in double quotes: whole phrases first ("give --model NAME, --model-config
/// config.json, or --experts E --top-k K" becomes "choose the Model: a shipped model, a Hugging
/// Face config.json, or Fields (Experts E, Top-k)"), then single flags ("--layer-map" becomes
/// "\"Layer map\"", "--format" becomes "\"Format\""; a number after the flag becomes " = <number>").
/// A flag it does not know is left as it is; everything else in the message (file names, values,
/// the rule) is unchanged.
QString guiFieldText(const QString& message);

} // namespace routepack::views

namespace routepack::views {

/// A duration for a progress line: "0.4 s" and "9.9 s" (one decimal below 10 s), "42 s", "2 min 05 s",
/// "1 h 02 min" (whole units, rounded to the nearest second or minute). Negative or NaN seconds read
/// as 0.
QString durationText(double seconds);

/// The time part of a job's progress line from its elapsed wall time (s) and the fraction done in
/// [0, 1] that the job reports: "3.0 s elapsed, about 9.0 s left", the remaining time estimated as
/// elapsed * (1 - fraction) / fraction (the rate so far held). Only "3.0 s elapsed" while the estimate
/// means little (under 1 s elapsed or under 2% done) and once the job reports 1 (done).
QString progressTimeText(double elapsedSeconds, double fraction);

} // namespace routepack::views
