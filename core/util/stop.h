#pragma once
// The one stop condition of every long planner stage (row count, seeding, annealing, the final
// pass, placement refinement, communication placement, Grouter's grouping): the caller's
// cooperative cancel flag and a wall-clock deadline, polled by the stages at their own intervals.
// A stage that sees it stops where it is and returns its best valid result so far; which of the
// two fired is the stop's reason (a cancelled plan and a plan cut by its time limit are reported
// apart).
#include <atomic>
#include <chrono>
#include <optional>

namespace routepack {

/// Why a stage stopped early.
enum class StopReason {
    None,      ///< not stopped
    Cancelled, ///< the cancel flag was set (SIGINT, the studio's cancel, Python's progress returning False)
    TimeLimit, ///< the deadline passed
};

/// A cancel flag (optional, not owned: it must outlive the token) and a deadline (optional). A
/// default-constructed token never stops. Copies are cheap and share the flag; every member is
/// safe to call from any thread.
class StopToken {
public:
    using Clock = std::chrono::steady_clock;

    StopToken() = default;
    /// Stops once `*cancel` is true (nullptr: never cancelled) or, with a deadline, once Clock::now()
    /// >= deadline.
    explicit StopToken(const std::atomic<bool>* cancel, std::optional<Clock::time_point> deadline = std::nullopt)
        : cancel_(cancel), deadline_(deadline) {}

    /// The planner's token: `cancel` and, for time_limit_s > 0, the deadline start + time_limit_s
    /// seconds (0 or less: no deadline).
    static StopToken with_time_limit(const std::atomic<bool>* cancel, double time_limit_s, Clock::time_point start);

    /// True once the flag is set or the deadline has passed: one relaxed atomic load, plus one
    /// steady_clock read when there is a deadline.
    bool stop_requested() const { return cancelled() || out_of_time(); }
    /// Which condition holds now: Cancelled when the flag is set (also past the deadline),
    /// TimeLimit when only the deadline has passed, None otherwise.
    StopReason reason() const {
        if (cancelled()) return StopReason::Cancelled;
        return out_of_time() ? StopReason::TimeLimit : StopReason::None;
    }
    /// The cancel flag is set.
    bool cancelled() const { return cancel_ != nullptr && cancel_->load(std::memory_order_relaxed); }
    /// The deadline has passed (false without one).
    bool out_of_time() const { return deadline_ && Clock::now() >= *deadline_; }
    std::optional<Clock::time_point> deadline() const { return deadline_; }

private:
    const std::atomic<bool>* cancel_ = nullptr;
    std::optional<Clock::time_point> deadline_;
};

/// The stop state one parallel stage shares among its workers: the first reason any worker saw
/// is kept, and from then on every poll answers true at once, so the other chains or replicas
/// finish without reading the flag or the clock again.
class StopLatch {
public:
    explicit StopLatch(StopToken token) : token_(token) {}
    StopLatch(const StopLatch&) = delete;
    StopLatch& operator=(const StopLatch&) = delete;

    /// True when the stage must stop (records the token's reason the first time it sees one).
    bool poll() {
        if (stopped()) return true;
        const StopReason r = token_.reason();
        if (r == StopReason::None) return false;
        int none = static_cast<int>(StopReason::None);
        reason_.compare_exchange_strong(none, static_cast<int>(r), std::memory_order_relaxed);
        return true;
    }
    /// A poll has seen the token fire.
    bool stopped() const { return reason() != StopReason::None; }
    /// The reason the first firing poll saw (None while none has).
    StopReason reason() const { return static_cast<StopReason>(reason_.load(std::memory_order_relaxed)); }

private:
    const StopToken token_;
    std::atomic<int> reason_{static_cast<int>(StopReason::None)};
};

} // namespace routepack
