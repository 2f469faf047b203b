//! The order in which a rank drives its message streams. Pure: the MPI exchange
//! follows it, and the all-ranks simulation in the tests replays it to show that the
//! order can never deadlock.
//!
//! On the exchange path the streams run in pairwise rounds, as large-message
//! all-to-all algorithms do: at distance `k` rank `r` sends to `(r + k) mod p` and
//! receives from `(r - k) mod p`. Distances are grouped into fixed windows of
//! `window` distances; a rank works through the windows in order, and within a window
//! every stream posts its next round of messages, after which the rank waits for all
//! of them. The two ends of a stream have the same distance, hence the
//! same window, and cut the same rounds, so the k-th step of a window holds the same
//! messages on both sides: by induction over (window, step), every step completes.
//!
//! On the local path (split-preserving) the few streams progress independently
//! (`MPI_Waitsome`): in place, a rank there completes its sends before it posts its
//! receives, which only independent progress tolerates.

use crate::core::error::Result;
use crate::core::fallible::try_vec;
use crate::distribution::peers::PeerVolume;
use crate::planning::planner::{RankPlan, Route};

/// Which way a stream's messages go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// This rank sends.
    Send,
    /// This rank receives.
    Receive,
}

/// How the streams of one rank are driven.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Pairwise rounds in windows of `window` distances, each step completed as a
    /// whole (the exchange path).
    Pairwise {
        /// Distances per window (at least 1).
        window: usize,
    },
    /// Every stream posts its next round as soon as its previous one completed (the
    /// local path).
    Independent,
}

impl Progress {
    /// The progress of a plan on `path` with windows of `window` distances.
    pub fn for_path(path: Route, window: usize) -> Progress {
        match path {
            Route::Local => Progress::Independent,
            Route::Exchange => Progress::Pairwise {
                window: window.max(1),
            },
        }
    }
}

/// This rank's proposal for the width of the pairwise windows, in distances: every
/// distance when it has at most `peers_per_window` peers in each direction,
/// otherwise the distance of its `peers_per_window`-th nearest peer in the
/// direction where that is nearest, so that its first window holds at most
/// `peers_per_window` streams per direction. The ranks agree on the narrowest
/// proposal (both ends of a stream must place it in the same window), so a pattern
/// whose peers lie far apart (the ranks of one grid column, say, `q` apart) runs in
/// one window rather than one window per `peers_per_window` distances.
pub fn proposed_window_width(
    plan: &RankPlan,
    nranks: usize,
    peers_per_window: usize,
) -> Result<usize> {
    let per_window = peers_per_window.max(1);
    let mut width = nranks.max(1);
    for (transfers, side) in [(&plan.sends, Side::Send), (&plan.recvs, Side::Receive)] {
        if transfers.len() <= per_window {
            continue;
        }
        let mut distances = try_vec(transfers.len(), "the peer distances", plan.rank)?;
        distances.extend(
            transfers
                .iter()
                .map(|t| distance(plan.rank, t.peer, side, nranks)),
        );
        let (_, &mut nearest, _) = distances.select_nth_unstable(per_window - 1);
        width = width.min(nearest);
    }
    Ok(width)
}

/// One direction of the traffic with one peer, placed in the schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScheduledStream {
    /// The other rank.
    pub peer: usize,
    /// Which way the messages go.
    pub side: Side,
    /// Elements the stream moves.
    pub elems: u64,
    /// The window the stream runs in (0 for independent progress).
    pub window: usize,
}

/// The distance from `rank` to `peer` along `side`: `k` when this rank sends to
/// `rank + k` or receives from `rank - k` (mod `nranks`). Both ends of a stream see
/// the same distance.
pub fn distance(rank: usize, peer: usize, side: Side, nranks: usize) -> usize {
    match side {
        Side::Send => (peer + nranks - rank) % nranks,
        Side::Receive => (rank + nranks - peer) % nranks,
    }
}

/// The streams of `plan` (one rank of `nranks`) in the order `progress` drives them:
/// by window, and within a window by distance, receive before send.
pub fn schedule(
    plan: &RankPlan,
    nranks: usize,
    progress: Progress,
) -> Result<Vec<ScheduledStream>> {
    let count = plan.recvs.len() + plan.sends.len();
    let mut streams = try_vec(count, "the message streams", plan.rank)?;
    let mut add = |transfers: &[PeerVolume], side: Side| {
        for t in transfers {
            let k = distance(plan.rank, t.peer, side, nranks);
            let window = match progress {
                Progress::Pairwise { window } => (k - 1) / window,
                Progress::Independent => 0,
            };
            streams.push(ScheduledStream {
                peer: t.peer,
                side,
                elems: t.elems,
                window,
            });
        }
    };
    add(&plan.recvs, Side::Receive);
    add(&plan.sends, Side::Send);
    streams.sort_unstable_by_key(|s| {
        (
            s.window,
            distance(plan.rank, s.peer, s.side, nranks),
            s.side == Side::Send,
        )
    });
    Ok(streams)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_ends_of_a_stream_share_distance_and_window() {
        for nranks in 1..9 {
            for rank in 0..nranks {
                for peer in (0..nranks).filter(|&p| p != rank) {
                    let send = distance(rank, peer, Side::Send, nranks);
                    let recv = distance(peer, rank, Side::Receive, nranks);
                    assert_eq!(send, recv);
                    assert!((1..nranks).contains(&send));
                }
            }
        }
    }
}
