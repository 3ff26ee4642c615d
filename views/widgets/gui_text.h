#pragma once
// The studio's words for the library's errors. An InputError about a setting (core/util/errors.h
// Setting: a planner budget, a window selector, a trace, window or topology name, a model field, a
// rewrite option) is worded from its key with the label of the studio field that sets it.
// guiErrorText is the one rendering of an error the studio shows (failed jobs and failed actions alike).
#include "core/model/topology.h"
#include "core/util/errors.h"

#include <QString>

#include <exception>

namespace routepack::views {

/// How the studio names `setting`: the label of the field that sets it in double quotes, followed
/// by " = <value>" when the message quotes a value: a planner budget by its budget_table() label
/// ("\"Placement rounds\""), a window selector by its choice in the window dialog
/// ("\"windows of N samples\" = 40"), "\"Trace name\"", "\"Window name\"", "\"Topology name\"", a
/// model field or a rewrite option by its field in the import or rewrite dialog ("\"Top-k\" = 9",
/// "\"Layer map\"", "\"Device\" = cuda"); a request ("ask_" keys) by a whole phrase in the import
/// dialog's terms ("choose the \"Format\""). A key it does not know is named by the library's words
/// (Setting::words).
QString guiSettingText(const Setting& setting);

/// The one rendering of an error for the studio: an InputError reworded with guiSettingText;
/// std::bad_alloc "out of memory"; anything else its what().
QString guiErrorText(const std::exception& e);

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

/// The token cap of a topology in words: "8192" (C in tokens), or, without a cap (batch rule
/// samples_per_cell c), "none (the c longest samples)": C is then derived per window
/// (effective_token_cap, views::plan_token_cap for a plan).
QString capText(const routepack::Topology& t);

} // namespace routepack::views
