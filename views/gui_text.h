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
