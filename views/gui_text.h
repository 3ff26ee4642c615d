#pragma once
// The studio's wording of messages written for the command line. The core's InputError texts name
// what to change by its CLI flag ("give --model NAME, ...", "window: --split 40 but ...",
// "planner: budget 'steps_per_level' must be ..."); a studio user sets those things in fields, so
// the views reword such a message at the point where they show it, and the CLI keeps its words.
#include <QString>

namespace routepack::views {

/// `message` with every CLI flag and planner budget key it names replaced by the studio field that
/// sets the same thing, in double quotes: whole phrases first ("give --model NAME, --model-config
/// config.json, or --experts E --top-k K" becomes "choose the Model: a shipped model, a Hugging
/// Face config.json, or Fields (Experts E, Top-k)"), then single flags ("--split 40" becomes
/// "\"windows of N samples\" = 40", "--format" becomes "\"Format\""), then budget keys ("budget
/// 'steps_per_level'" becomes "\"Steps K per level\""). A flag it does not know is left as it is;
/// everything else in the message (file names, values, the rule) is unchanged.
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
