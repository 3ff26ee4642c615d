#pragma once
// The training stacks' own sample layouts, written from their documented algorithms, for the batch
// rules benchmark (bench_batch_rules) and its check (tst_batch_rules::stack_balancers):
//  - verl at commit 1dda039b: the driver's _balance_batch (verl/trainer/ppo/ray_trainer.py: equal-size
//    Karmarkar-Karp of the workloads over the D DP ranks, each rank's samples reordered small/large),
//    DataProto.chunk (rank d gets part d), then rearrange_micro_batches on each rank
//    (verl/utils/seqlen_balancing.py: ceil(tokens / max_token_len) micro-batches, the maximum over the
//    DP group, Karmarkar-Karp of the workloads without equal sizes, micro-batches ordered by
//    use_dynamic_bsz_balance);
//  - slime (THUDM/slime, slime/utils/dp_schedule.py build_dp_schedule, static path): micro-batches of
//    micro_batch_size consecutive samples, distributed over the DP ranks by equal-size Karmarkar-Karp of
//    their forward FLOPs (balance_data) or round-robin.
// Header-only; no stack code is used, only the algorithms as their sources describe them.
#include "core/plan/score/packing.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace routepack::stacks {

/// verl's calculate_workload: 24576 t + t^2 (a 7B dense model's FLOPs up to a constant), t in tokens.
inline std::int64_t verl_workload(std::int64_t t) {
    return 24576 * t + t * t;
}

/// slime's calculate_fwd_flops([t], args) for DeepSeek-V2-Lite's configuration (hidden 2048, 16 heads,
/// MLA with kv_lora_rank 512 and no q_lora_rank, qk 128 + rope 64, v 128, 27 layers of which the first
/// dense with ffn 10944 and 26 MoE with 6 x 1408 routed + 2816 shared, vocab 102400):
/// 4,895,801,344 t + 138,240 t^2. Every term is an integer, so this equals slime's float value.
inline std::int64_t slime_flops_deepseek_v2_lite(std::int64_t t) {
    return 4895801344LL * t + 138240LL * t * t;
}

namespace detail {

/// One part of the differencing: its sum and its (index, value) items in insertion order.
struct KkSet {
    std::int64_t sum = 0;
    std::vector<std::pair<int, std::int64_t>> items;
};

/// verl's Set.__lt__: by sum, then item count, then the item lists lexicographically.
inline bool set_less(const KkSet& a, const KkSet& b) {
    if (a.sum != b.sum) return a.sum < b.sum;
    if (a.items.size() != b.items.size()) return a.items.size() < b.items.size();
    return a.items < b.items;
}

/// k parts kept in nonincreasing order (a stable sort, as Python's sorted(reverse=True)).
struct KkState {
    std::vector<KkSet> sets;
    void sort() {
        std::stable_sort(sets.begin(), sets.end(), [](const KkSet& a, const KkSet& b) { return set_less(b, a); });
    }
    std::int64_t spread() const { return sets.front().sum - sets.back().sum; }
};

/// verl's State.__lt__ (the heap's minimum is merged first): the larger spread first, then the state
/// whose largest part is larger. A strict total order on states with disjoint items.
inline bool state_first(const KkState& a, const KkState& b) {
    if (a.spread() != b.spread()) return a.spread() > b.spread();
    return set_less(b.sets.front(), a.sets.front());
}

} // namespace detail

/// verl's karmarkar_karp(values, k, equal_size): largest differencing into k parts. The values sorted
/// by (value, index) ascending start as states of one item (equal_size false) or as consecutive tuples
/// of k items (equal_size true, one item per part); the two states merged first (detail::state_first)
/// are combined part i with part k-1-i of the second, until one state is left. Returns its k parts in
/// nonincreasing order, each with its indices in insertion order. std::invalid_argument when k < 1, or
/// with equal_size when k does not divide the count.
inline std::vector<std::vector<int>> verl_karmarkar_karp(const std::vector<std::int64_t>& values, int k,
                                                         bool equal_size) {
    const int n = static_cast<int>(values.size());
    if (k < 1 || (equal_size && n % k != 0))
        throw std::invalid_argument("verl_karmarkar_karp: " + std::to_string(n) + " values into " + std::to_string(k) +
                                    " parts" + (equal_size ? " of equal size" : ""));
    std::vector<std::pair<std::int64_t, int>> sorted(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
        sorted[static_cast<std::size_t>(i)] = {values[static_cast<std::size_t>(i)], i};
    std::sort(sorted.begin(), sorted.end());
    auto later = [](const detail::KkState& a, const detail::KkState& b) { return detail::state_first(b, a); };
    std::vector<detail::KkState> heap;
    const int width = equal_size ? k : 1;
    for (int off = 0; off < n; off += width) {
        detail::KkState s;
        s.sets.resize(static_cast<std::size_t>(k));
        for (int j = 0; j < width; ++j) {
            const auto& [v, i] = sorted[static_cast<std::size_t>(off + j)];
            s.sets[static_cast<std::size_t>(j)].items.emplace_back(i, v);
            s.sets[static_cast<std::size_t>(j)].sum += v;
        }
        s.sort();
        heap.push_back(std::move(s));
        std::push_heap(heap.begin(), heap.end(), later);
    }
    if (heap.empty()) return std::vector<std::vector<int>>(static_cast<std::size_t>(k));
    while (heap.size() > 1) {
        std::pop_heap(heap.begin(), heap.end(), later);
        detail::KkState a = std::move(heap.back());
        heap.pop_back();
        std::pop_heap(heap.begin(), heap.end(), later);
        detail::KkState b = std::move(heap.back());
        heap.pop_back();
        for (int i = 0; i < k; ++i) {
            auto& to = a.sets[static_cast<std::size_t>(i)];
            const auto& from = b.sets[static_cast<std::size_t>(k - 1 - i)];
            to.items.insert(to.items.end(), from.items.begin(), from.items.end());
            to.sum += from.sum;
        }
        a.sort();
        heap.push_back(std::move(a));
        std::push_heap(heap.begin(), heap.end(), later);
    }
    std::vector<std::vector<int>> parts;
    for (const auto& s : heap.front().sets) {
        parts.emplace_back();
        for (const auto& it : s.items)
            parts.back().push_back(it.first);
    }
    return parts;
}

/// verl's get_seqlen_balanced_partitions: verl_karmarkar_karp with each part's indices ascending.
/// std::invalid_argument when there are fewer values than parts or a part is empty (verl asserts).
inline std::vector<std::vector<int>> verl_balanced_partitions(const std::vector<std::int64_t>& values, int k,
                                                              bool equal_size) {
    if (static_cast<int>(values.size()) < k)
        throw std::invalid_argument("verl_balanced_partitions: " + std::to_string(values.size()) + " values < " +
                                    std::to_string(k) + " parts");
    auto parts = verl_karmarkar_karp(values, k, equal_size);
    for (auto& p : parts) {
        if (p.empty()) throw std::invalid_argument("verl_balanced_partitions: a part is empty");
        std::sort(p.begin(), p.end());
    }
    return parts;
}

/// verl's layout of one step's batch (samples 0..n-1 with `length` tokens, n divisible by D) on D DP
/// ranks with max_token_len C, as an R x D Layout: cell (r, d) is rank d's r-th micro-batch (its
/// samples in the rank's local order). Rank d's samples: part d of the equal-size partition of the
/// workloads, sorted by (workload, index) and laid out as the even positions then the odd ones
/// reversed (_balance_batch). R = max over ranks of min(n / D, ceil(rank tokens / C))
/// (same_micro_num_in_dp). std::invalid_argument when D does not divide n, a sample is longer than C
/// (verl asserts max_token_len >= the longest sequence) or a micro-batch would be empty.
inline Layout verl_layout(const std::vector<std::int64_t>& length, int D, std::int64_t C) {
    const int n = static_cast<int>(length.size());
    if (D < 1 || n % D != 0)
        throw std::invalid_argument("verl_layout: " + std::to_string(n) + " samples on " + std::to_string(D) +
                                    " DP ranks");
    std::vector<std::int64_t> w(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        if (length[static_cast<std::size_t>(i)] > C)
            throw std::invalid_argument("verl_layout: sample " + std::to_string(i) + " is longer than max_token_len");
        w[static_cast<std::size_t>(i)] = verl_workload(length[static_cast<std::size_t>(i)]);
    }
    std::vector<std::vector<int>> ranks = verl_balanced_partitions(w, D, true);
    int R = 0;
    for (auto& part : ranks) {
        std::sort(part.begin(), part.end(), [&](int a, int b) {
            return std::pair(w[static_cast<std::size_t>(a)], a) < std::pair(w[static_cast<std::size_t>(b)], b);
        });
        std::vector<int> ordered;
        for (std::size_t j = 0; j < part.size(); j += 2)
            ordered.push_back(part[j]);
        for (std::size_t j = part.size() % 2 == 0 ? part.size() - 1 : part.size() - 2; j < part.size(); j -= 2)
            ordered.push_back(part[j]);
        part = ordered;
        std::int64_t tokens = 0;
        for (int i : part)
            tokens += length[static_cast<std::size_t>(i)];
        R = std::max<int>(
            R, static_cast<int>(std::min<std::int64_t>(static_cast<std::int64_t>(part.size()), (tokens + C - 1) / C)));
    }
    std::vector<std::vector<int>> cells(static_cast<std::size_t>(R) * static_cast<std::size_t>(D));
    for (int d = 0; d < D; ++d) {
        const auto& local = ranks[static_cast<std::size_t>(d)];
        std::vector<std::int64_t> wl;
        for (int i : local)
            wl.push_back(w[static_cast<std::size_t>(i)]);
        auto mbs = verl_balanced_partitions(wl, R, false);
        auto key = [&](const std::vector<int>& m) {
            std::int64_t s = 0;
            for (int j : m)
                s += wl[static_cast<std::size_t>(j)];
            return std::pair(s, m.front());
        };
        std::stable_sort(mbs.begin(), mbs.end(), [&](const auto& a, const auto& b) { return key(b) < key(a); });
        std::vector<std::vector<int>> order;
        for (int j = (static_cast<int>(mbs.size()) - 1) / 2 * 2; j >= 0; j -= 2)
            order.push_back(mbs[static_cast<std::size_t>(j)]);
        for (std::size_t j = 1; j < mbs.size(); j += 2)
            order.push_back(mbs[j]);
        for (int r = 0; r < R; ++r)
            for (int j : order[static_cast<std::size_t>(r)])
                cells[static_cast<std::size_t>(r) * D + d].push_back(local[static_cast<std::size_t>(j)]);
    }
    return Layout::from_cells(R, D, cells);
}

/// slime's static micro-batches on D DP ranks: micro-batch m holds samples m c .. m c + c - 1 (window
/// order); with `balance` the micro-batches go to the ranks by verl_balanced_partitions of their summed
/// `flops` (equal size; slime's own karmarkar_karp is verl's), otherwise rank d gets d, d + D, ...
/// Cell (r, d) is rank d's r-th micro-batch in ascending micro-batch index; R = n / (c D).
/// std::invalid_argument when c D does not divide n (slime's static path asserts it).
template <class Flops>
Layout slime_static_layout(const std::vector<std::int64_t>& length, int D, int c, bool balance, Flops&& flops) {
    const int n = static_cast<int>(length.size());
    if (D < 1 || c < 1 || n % (c * D) != 0)
        throw std::invalid_argument("slime_static_layout: " + std::to_string(n) + " samples are not a multiple of " +
                                    std::to_string(c) + " x " + std::to_string(D));
    const int K = n / c, R = K / D;
    std::vector<std::vector<int>> ranks(static_cast<std::size_t>(D));
    if (balance) {
        std::vector<std::int64_t> weight(static_cast<std::size_t>(K), 0);
        for (int i = 0; i < n; ++i)
            weight[static_cast<std::size_t>(i / c)] += flops(length[static_cast<std::size_t>(i)]);
        ranks = verl_balanced_partitions(weight, D, true);
    } else {
        for (int m = 0; m < K; ++m)
            ranks[static_cast<std::size_t>(m % D)].push_back(m);
    }
    std::vector<std::vector<int>> cells(static_cast<std::size_t>(K));
    for (int d = 0; d < D; ++d)
        for (int r = 0; r < R; ++r)
            for (int j = 0; j < c; ++j)
                cells[static_cast<std::size_t>(r) * D + d].push_back(
                    ranks[static_cast<std::size_t>(d)][static_cast<std::size_t>(r)] * c + j);
    return Layout::from_cells(R, D, cells);
}

} // namespace routepack::stacks
