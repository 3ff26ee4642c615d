#pragma once
// The topology form's text fields: EDP shards ("0-3 | 4-7") and node lists ("0, 0, 1, 1"), parsed
// at every keystroke and written back from a topology.
#include <QString>

#include <string>
#include <vector>

namespace routepack::views {

/// Parses EDP shards written as "0,1 | 2,3" or "0-3 | 4-7" (groups separated by '|' or ';', slots
/// by ',', ranges a-b). InputError naming the bad token; the partition itself is checked by
/// parse_topology. Cheap enough for every keystroke: before a range is expanded its upper bound is
/// checked against `dpSlots` (D; 0 = unknown: at most DP slot 65535), "EDP shards: range '0-9'
/// names DP slot 9, outside 0..3 (D = 4)", and all ranges together may list at most 2^20 slots.
std::vector<std::vector<int>> parseShardText(const QString& text, int dpSlots = 0);
/// Inverse of parseShardText, with ranges for runs of 3 or more ("0-3 | 4-7", "0,1 | 2,3").
QString shardText(const std::vector<std::vector<int>>& shards);

/// Parses a node list ("0, 0, 1, 1" or "0 0 1 1": one node id per EP rank or DP slot, separated by
/// commas and/or spaces; "" = not given). InputError "<what>: 'x' is not a node id (an integer in
/// 0..65535)" naming the bad token; lengths and ids against P / D are checked by parse_topology.
std::vector<int> parseNodeListText(const QString& text, const std::string& what);
/// Inverse of parseNodeListText: "0, 0, 1, 1" ("" for an empty list).
QString nodeListText(const std::vector<int>& nodes);

} // namespace routepack::views
