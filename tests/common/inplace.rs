//! Replays every rank's part of an in-place schedule in memory, round by round,
//! every byte: what the planner and grid simulations check of in-place execution.

// The replay indexes every rank's buffers, staging and parts by rank on purpose.
#![allow(clippy::needless_range_loop)]

use std::ops::Range;

use distreshape::testing::{
    PieceMove, Problem, RankSchedule, Redistribution, Schedule, Unscheduled, messages,
};

use crate::common::engine::to_bytes;

/// What a replay saw.
#[derive(Clone, Copy, Debug, Default)]
pub struct Replayed {
    /// Rounds of the schedule.
    pub rounds: usize,
    /// Pieces of several runs (strided).
    pub strided: usize,
    /// Pieces in all.
    pub pieces: usize,
}

/// Bytes landing on a rank in a round.
struct Landing {
    rank: usize,
    /// Where they land, run by run.
    at: Vec<Range<usize>>,
    bytes: Vec<u8>,
}

/// The bytes of `ranges` of `buffer`, concatenated.
fn gather(buffer: &[u8], ranges: impl Iterator<Item = Range<usize>>) -> Vec<u8> {
    ranges.flat_map(|r| buffer[r].iter().copied()).collect()
}

/// Moves local piece `t` within `buffer` run by run, in the executor's order
/// ([`PieceMove::forward`]), each run read just before it lands and its readers
/// released then: a run may land on its own source or on runs of the piece
/// already read, never on bytes anything else still reads.
fn move_over_itself(
    t: &PieceMove,
    buffer: &mut [u8],
    readers: &mut [u32],
    writes: &mut [u32],
    ctx: &str,
) {
    let sources: Vec<Range<usize>> = t.src_ranges().collect();
    let targets: Vec<Range<usize>> = t.dst_ranges().collect();
    let order: Vec<usize> = match t.forward() {
        true => (0..sources.len()).collect(),
        false => (0..sources.len()).rev().collect(),
    };
    for i in order {
        let run = buffer[sources[i].clone()].to_vec();
        sources[i].clone().for_each(|b| readers[b] -= 1);
        for (b, byte) in targets[i].clone().zip(run) {
            assert_eq!(
                readers[b], 0,
                "a local move lands on byte {b} before it is read: {ctx}"
            );
            buffer[b] = byte;
            writes[b] += 1;
        }
    }
}

/// Replays the in-place schedule of `layouts` (8-byte elements, whose values on
/// each rank are `inputs` and must become `outputs`) with `budget` bytes of staging
/// per rank and at most `most_pieces` pieces (fewer than the runs makes pieces of
/// several runs): a round's sources are read before any of its writes land, a byte
/// is written only once every piece reading it has departed (a local move may land
/// on its own runs already read), the staging stays within the budget, the two sides
/// of every message cut it alike, a local move copies its runs in the order the
/// executor does, and every output element arrives exactly once. `None` when the
/// pieces do not fit `most_pieces`; panics when there is no schedule otherwise, or
/// when a check fails.
pub fn replay_in_place(
    layouts: &Redistribution,
    inputs: &[Vec<u64>],
    outputs: &[Vec<u64>],
    budget: usize,
    most_pieces: usize,
    ctx: &str,
) -> Option<Replayed> {
    let p = inputs.len();
    let budgets = vec![budget; p];
    let problem = Problem {
        layouts,
        elem_size: 8,
        budgets: &budgets,
        scheduling_bytes_per_piece: 0,
    };
    let schedule = match Schedule::new(&problem, most_pieces) {
        Ok(s) => s,
        Err(Unscheduled::TooManyPieces) => return None,
        Err(why) => panic!("no in-place schedule with {budget} B: {why:?}: {ctx}"),
    };
    let parts: Vec<RankSchedule> = (0..p).map(|r| schedule.for_rank(r)).collect();
    let mut buffers: Vec<Vec<u8>> = (0..p)
        .map(|r| {
            let mut b = to_bytes(&inputs[r]);
            b.resize(inputs[r].len().max(outputs[r].len()) * 8, 0xEE);
            b
        })
        .collect();
    // Pieces still reading each byte; bytes already in place are read forever.
    let mut readers: Vec<Vec<u32>> = buffers.iter().map(|b| vec![0; b.len()]).collect();
    let mut writes: Vec<Vec<u32>> = buffers.iter().map(|b| vec![0; b.len()]).collect();
    let mut seen = Replayed {
        rounds: schedule.rounds(),
        ..Replayed::default()
    };
    for piece in schedule.moves().map(|m| m.piece) {
        seen.pieces += 1;
        seen.strided += usize::from(piece.shape.count > 1);
        for run in piece.source().ranges() {
            run.for_each(|i| readers[piece.from][i] += 1);
        }
    }
    for r in 0..p {
        for i in 0..inputs[r].len() {
            if outputs[r].get(i) == Some(&inputs[r][i]) {
                (i * 8..i * 8 + 8).for_each(|b| readers[r][b] += 1);
            }
        }
    }
    let sizes = parts.iter().map(|part| part.staging_bytes);
    assert!(
        sizes.clone().all(|b| b <= budget),
        "staging beyond the budget: {ctx}"
    );
    // Each rank's staging as large as its part says, as the executor allocates it.
    let mut staging: Vec<Vec<u8>> = sizes.map(|b| vec![0; b]).collect();
    for round in 0..schedule.rounds() {
        let mut departed: Vec<(usize, Range<usize>)> = Vec::new();
        for r in 0..p {
            for t in &parts[r].rounds[round].stage {
                let slots: Vec<Range<usize>> = t.staged_ranges().expect("a slot").collect();
                let end = slots.last().map_or(0, |s| s.end);
                let size = staging[r].len();
                assert!(end <= size, "rank {r} stages beyond its {size} B: {ctx}");
                let bytes = gather(&buffers[r], t.src_ranges());
                staging[r][slots[0].start..end].copy_from_slice(&bytes);
                departed.extend(t.src_ranges().map(|s| (r, s)));
            }
        }
        // Every source of the round, read before its writes.
        let read = |r: usize, t: &PieceMove| -> Vec<u8> {
            match t.staged_ranges() {
                Some(slots) => gather(&staging[r], slots),
                None => gather(&buffers[r], t.src_ranges()),
            }
        };
        let mut landing: Vec<Landing> = Vec::new();
        for r in 0..p {
            let ops = &parts[r].rounds[round];
            for q in 0..p {
                let sent: Vec<&PieceMove> = ops.sends.iter().filter(|t| t.peer == q).collect();
                let theirs = &parts[q].rounds[round].receives;
                let got: Vec<&PieceMove> = theirs.iter().filter(|t| t.peer == r).collect();
                assert_eq!(sent.len(), got.len(), "round messages of {r}->{q}: {ctx}");
                let cut = |list: &[PieceMove], peer: usize| -> Vec<usize> {
                    messages(list)
                        .filter(|m| m[0].peer == peer)
                        .map(<[PieceMove]>::len)
                        .collect()
                };
                assert_eq!(cut(&ops.sends, q), cut(theirs, r), "{r}->{q}: {ctx}");
                for (s, g) in sent.iter().zip(&got) {
                    assert_eq!((s.src, s.shape), (g.src, g.shape), "{r}->{q}: {ctx}");
                    let at = g.dst_ranges().collect();
                    let (rank, bytes) = (q, read(r, s));
                    landing.push(Landing { rank, at, bytes });
                }
            }
            for t in ops.moves.iter().filter(|t| t.staged.is_some()) {
                let (at, bytes) = (t.dst_ranges().collect(), read(r, t));
                landing.push(Landing { rank: r, at, bytes });
            }
            for t in &ops.sends {
                if t.staged.is_none() {
                    departed.extend(t.src_ranges().map(|s| (r, s)));
                }
            }
        }
        for Landing { rank: r, at, bytes } in landing {
            for (b, &byte) in at.into_iter().flatten().zip(&bytes) {
                let readers = readers[r][b];
                let what = format!("rank {r} writes byte {b} in round {round} before it is read");
                assert_eq!(readers, 0, "{what}: {ctx}");
                buffers[r][b] = byte;
                writes[r][b] += 1;
            }
        }
        for r in 0..p {
            let unstaged = parts[r].rounds[round]
                .moves
                .iter()
                .filter(|t| t.staged.is_none());
            for t in unstaged {
                move_over_itself(t, &mut buffers[r], &mut readers[r], &mut writes[r], ctx);
            }
        }
        for (r, src) in departed {
            src.for_each(|i| readers[r][i] -= 1);
        }
    }
    for r in 0..p {
        let out = to_bytes(&outputs[r]);
        assert_eq!(&buffers[r][..out.len()], &out[..], "rank {r} output: {ctx}");
        assert!(
            writes[r].iter().all(|&w| w <= 1),
            "rank {r}: a byte written twice: {ctx}"
        );
    }
    Some(seen)
}
