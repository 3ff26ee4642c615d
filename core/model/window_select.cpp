#include "core/model/window_select.h"

#include "core/util/errors.h"
#include "core/util/rng.h"
#include "core/util/seeds.h"
#include "core/util/text.h"

#include <algorithm>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace routepack {

namespace {

std::string quoted(const std::string& s) {
    return "'" + util::printable(s) + "'";
}

/// The window selector `key` ("first", "random", "split") as the subject of a message, with the
/// count it was given when `with_value`.
Setting selector(const char* key, std::size_t n, bool with_value) {
    const std::string value = with_value ? std::to_string(n) : std::string();
    return {key, value, with_value ? std::string(key) + " " + value : std::string(key)};
}

void check_count(const char* key, std::size_t n, std::size_t have, const std::string& trace) {
    if (n < 1) throw InputError("window: ", selector(key, n, false), " must be >= 1 (got 0)");
    if (n > have)
        throw InputError("window: ", selector(key, n, true),
                         " but trace " + quoted(trace) + " has only " + std::to_string(have) + " samples");
}

} // namespace

WindowSelection select_first(const std::vector<SampleInfo>& samples, std::size_t n, const std::string& trace) {
    check_count("first", n, samples.size(), trace);
    WindowSelection w;
    w.ids.reserve(samples.size());
    for (const auto& s : samples)
        w.ids.push_back(s.id);
    std::sort(w.ids.begin(), w.ids.end(), natural_less);
    w.ids.resize(n);
    w.definition = "first " + std::to_string(n) + " in numeric id order";
    return w;
}

WindowSelection select_random(const std::vector<SampleInfo>& samples, std::size_t n, std::uint64_t seed,
                              const std::string& trace) {
    check_count("random", n, samples.size(), trace);
    std::vector<std::size_t> idx(samples.size());
    std::iota(idx.begin(), idx.end(), std::size_t{0});
    std::uint64_t state = seeds::window_sampler(seed);
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t j = i + uniform_below(idx.size() - i, [&] { return splitmix64(state); });
        std::swap(idx[i], idx[j]);
    }
    idx.resize(n);
    std::sort(idx.begin(), idx.end());
    WindowSelection w;
    for (auto i : idx)
        w.ids.push_back(samples[i].id);
    w.definition = "random " + std::to_string(n) + " seed " + std::to_string(seed);
    return w;
}

WindowSelection select_groups(const std::vector<SampleInfo>& samples, const std::vector<std::string>& groups,
                              const std::string& trace) {
    std::set<std::string> have;
    for (const auto& s : samples)
        if (!s.group.empty()) have.insert(s.group);
    if (have.empty()) throw InputError("window: trace " + quoted(trace) + " has no GRPO groups");
    if (groups.empty()) throw InputError("window: no GRPO group given for trace " + quoted(trace));
    for (const auto& g : groups)
        if (!have.count(g)) throw InputError("window: trace " + quoted(trace) + " has no group " + quoted(g));
    const std::set<std::string> want(groups.begin(), groups.end());
    WindowSelection w;
    for (const auto& s : samples)
        if (want.count(s.group)) w.ids.push_back(s.id);
    std::string list;
    for (const auto& g : groups)
        list += (list.empty() ? "" : ",") + g;
    w.definition = "groups " + list;
    return w;
}

std::vector<WindowSelection> split_consecutive(const std::vector<SampleInfo>& samples, std::size_t n,
                                               const std::string& trace) {
    check_count("split", n, samples.size(), trace);
    std::vector<WindowSelection> out;
    const std::size_t total = samples.size();
    for (std::size_t b = 0; b < total; b += n) {
        const std::size_t e = std::min(total, b + n);
        WindowSelection w;
        for (std::size_t i = b; i < e; ++i)
            w.ids.push_back(samples[i].id);
        w.definition = "split " + std::to_string(n) + ": samples " + std::to_string(b + 1) + "-" + std::to_string(e) +
                       " of " + std::to_string(total);
        if (e - b < n) w.definition += ", remainder of " + std::to_string(e - b);
        out.push_back(std::move(w));
    }
    return out;
}

std::vector<WindowSelection> split_groups(const std::vector<SampleInfo>& samples, std::size_t g,
                                          const std::string& trace) {
    const std::vector<std::string> groups = sample_groups(samples);
    if (groups.empty()) throw InputError("window: trace " + quoted(trace) + " has no GRPO groups");
    if (g < 1) throw InputError("window: ", selector("split_groups", g, false), " must be >= 1 (got 0)");
    if (g > groups.size())
        throw InputError("window: ", selector("split_groups", g, true),
                         " but trace " + quoted(trace) + " has only " + std::to_string(groups.size()) + " GRPO groups");
    std::unordered_map<std::string, std::size_t> window_of;
    for (std::size_t k = 0; k < groups.size(); ++k)
        window_of[groups[k]] = k / g;
    const std::size_t count = (groups.size() + g - 1) / g;
    std::vector<WindowSelection> out(count);
    for (const auto& s : samples)
        if (!s.group.empty()) out[window_of.at(s.group)].ids.push_back(s.id);
    for (std::size_t w = 0; w < count; ++w) {
        const std::size_t b = w * g, e = std::min(groups.size(), b + g);
        out[w].definition = "split-groups " + std::to_string(g) + ": groups " + std::to_string(b + 1) + "-" +
                            std::to_string(e) + " of " + std::to_string(groups.size());
        if (e - b < g) out[w].definition += ", remainder of " + std::to_string(e - b);
    }
    return out;
}

std::vector<std::string> sample_groups(const std::vector<SampleInfo>& samples) {
    std::vector<std::string> out;
    std::unordered_set<std::string> seen;
    for (const auto& s : samples)
        if (!s.group.empty() && seen.insert(s.group).second) out.push_back(s.group);
    return out;
}

std::vector<std::string> split_window_names(const std::string& prefix, std::size_t count) {
    std::vector<std::string> names;
    if (count == 0) return names;
    const std::size_t digits = std::max<std::size_t>(3, std::to_string(count - 1).size());
    for (std::size_t k = 0; k < count; ++k) {
        const std::string num = std::to_string(k);
        names.push_back(prefix + "-" + std::string(digits - num.size(), '0') + num);
    }
    return names;
}

} // namespace routepack
