//! The in-place engine of every rank run in one process: the plans' in-place
//! schedule checked for the invariants no execution can show, then the library's
//! real engine ([`ScheduledExchange`]) run by every rank, one thread each, over one
//! in-memory network, each rank in place or out of place as it chooses.

// The checks index every rank's parts and counters by rank on purpose.
#![allow(clippy::needless_range_loop)]

use std::ops::Range;

use distreshape::testing::{
    Buffers, Channel, Endpoint, Network, PieceMove, Problem, RankPlan, RankSchedule, Schedule,
    ScheduledExchange, Unscheduled,
};

use crate::common::engine::{execute_all, to_bytes};
use crate::common::kept::copy_kept;

/// What a schedule holds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Scheduled {
    /// Rounds of the schedule.
    pub rounds: usize,
    /// Pieces of several runs (strided).
    pub strided: usize,
    /// Pieces in all.
    pub pieces: usize,
}

/// Schedules the plans' reshape in place (8-byte elements, whose global indices on
/// each rank are `inputs` and must become `outputs`) with `budget` bytes of staging
/// per rank and at most `most_pieces` pieces (fewer than the runs makes pieces of
/// several runs), checks the schedule's invariants ([`check_schedule`]), then runs
/// the real in-place engine of every rank for each of `executions` (per rank: in
/// place or not) and checks every output element ([`run_engine`]). `None` when the
/// pieces do not fit `most_pieces`, or the schedule would take more rounds than
/// the scheduler allows (a plan then runs in place with everything sent packed,
/// which the exchange tests cover); panics when there is no schedule otherwise,
/// or when a check fails.
pub fn run_in_place(
    plans: &[RankPlan],
    inputs: &[Vec<u64>],
    outputs: &[Vec<u64>],
    budget: usize,
    most_pieces: usize,
    executions: &[Vec<bool>],
    ctx: &str,
) -> Option<Scheduled> {
    let budgets = vec![budget; plans.len()];
    let problem = Problem {
        layouts: &plans[0].layouts,
        elem_size: 8,
        budgets: &budgets,
        scheduling_bytes_per_piece: 0,
    };
    let schedule = match Schedule::new(&problem, most_pieces) {
        Ok(s) => s,
        Err(Unscheduled::TooManyPieces | Unscheduled::TooManyRounds) => return None,
        Err(why) => panic!("no in-place schedule with {budget} B: {why:?}: {ctx}"),
    };
    let parts: Vec<RankSchedule> = (0..plans.len()).map(|r| schedule.for_rank(r)).collect();
    let seen = check_schedule(&schedule, &parts, inputs, outputs, budget, ctx);
    run_engine(plans, parts, inputs, outputs, executions, ctx);
    Some(seen)
}

/// Checks what no execution can show of `schedule` (every rank's part in
/// `parts`), counting who reads and writes each byte rather than moving any: a
/// round's sources are read before any of its writes land, a byte is written only
/// once every piece reading it has departed (a local move, copying its runs in
/// the engine's order, may land on its own runs already read), no byte is written
/// twice, and every staging slot lies within the rank's staging, itself within
/// `budget`. An execution may still come out right where these fail, when a
/// message happens to be read before the write that would spoil it lands.
fn check_schedule(
    schedule: &Schedule,
    parts: &[RankSchedule],
    inputs: &[Vec<u64>],
    outputs: &[Vec<u64>],
    budget: usize,
    ctx: &str,
) -> Scheduled {
    let p = inputs.len();
    let sizes: Vec<usize> = (0..p)
        .map(|r| inputs[r].len().max(outputs[r].len()) * 8)
        .collect();
    // Pieces still reading each byte; bytes already in place are read forever.
    let mut readers: Vec<Vec<u32>> = sizes.iter().map(|&n| vec![0; n]).collect();
    let mut writes: Vec<Vec<u32>> = sizes.iter().map(|&n| vec![0; n]).collect();
    let mut seen = Scheduled {
        rounds: schedule.rounds(),
        ..Scheduled::default()
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
    for (r, part) in parts.iter().enumerate() {
        let staging = part.staging_bytes;
        assert!(staging <= budget, "rank {r} stages {staging} B: {ctx}");
        let slots = part.rounds.iter().flat_map(|round| &round.stage);
        for end in slots.filter_map(|t| t.staged_ranges()?.last().map(|s| s.end)) {
            assert!(
                end <= staging,
                "rank {r} stages beyond its {staging} B: {ctx}"
            );
        }
    }
    for round in 0..schedule.rounds() {
        check_round(parts, round, &mut readers, &mut writes, ctx);
    }
    for r in 0..p {
        let twice = writes[r].iter().position(|&w| w > 1);
        assert_eq!(twice, None, "rank {r}: a byte written twice: {ctx}");
    }
    seen
}

/// Counts round `round` of every rank's part: the staged and sent sources depart
/// once the round's messages and staged moves have landed, the unstaged local
/// moves land run by run as they read.
fn check_round(
    parts: &[RankSchedule],
    round: usize,
    readers: &mut [Vec<u32>],
    writes: &mut [Vec<u32>],
    ctx: &str,
) {
    let mut departed: Vec<(usize, Range<usize>)> = Vec::new();
    for (r, part) in parts.iter().enumerate() {
        let ops = &part.rounds[round];
        departed.extend(
            ops.stage
                .iter()
                .flat_map(|t| t.src_ranges().map(|s| (r, s))),
        );
        let unstaged_sends = ops.sends.iter().filter(|t| t.staged.is_none());
        departed.extend(unstaged_sends.flat_map(|t| t.src_ranges().map(|s| (r, s))));
        let staged_moves = ops.moves.iter().filter(|t| t.staged.is_some());
        for t in ops.receives.iter().chain(staged_moves) {
            for b in t.dst_ranges().flatten() {
                let what = format!("rank {r} writes byte {b} in round {round} before it is read");
                assert_eq!(readers[r][b], 0, "{what}: {ctx}");
                writes[r][b] += 1;
            }
        }
    }
    for (r, part) in parts.iter().enumerate() {
        let unstaged = part.rounds[round]
            .moves
            .iter()
            .filter(|t| t.staged.is_none());
        for t in unstaged {
            move_over_itself(t, &mut readers[r], &mut writes[r], ctx);
        }
    }
    for (r, src) in departed {
        src.for_each(|i| readers[r][i] -= 1);
    }
}

/// Counts local piece `t` moving within its buffer run by run, in the engine's
/// order ([`PieceMove::forward`]), each run read just before it lands and its
/// readers released then: a run may land on its own source or on runs of the
/// piece already read, never on bytes anything else still reads.
fn move_over_itself(t: &PieceMove, readers: &mut [u32], writes: &mut [u32], ctx: &str) {
    let sources: Vec<Range<usize>> = t.src_ranges().collect();
    let targets: Vec<Range<usize>> = t.dst_ranges().collect();
    let order: Vec<usize> = match t.forward() {
        true => (0..sources.len()).collect(),
        false => (0..sources.len()).rev().collect(),
    };
    for i in order {
        sources[i].clone().for_each(|b| readers[b] -= 1);
        for b in targets[i].clone() {
            let readers = readers[b];
            assert_eq!(
                readers, 0,
                "a local move lands on byte {b} before it is read: {ctx}"
            );
            writes[b] += 1;
        }
    }
}

/// Runs every rank's real in-place engine for `parts`, one thread per rank over
/// one in-memory network ([`execute_all`]), once per execution of `executions`
/// (whether each rank runs in place; out of place it then copies its kept
/// elements, as the plan does), the engines made once and reused as the plan
/// reuses them, each execution on fresh buffers: besides what [`execute_all`]
/// checks, each rank receives exactly the bytes it does not keep.
fn run_engine(
    plans: &[RankPlan],
    parts: Vec<RankSchedule>,
    inputs: &[Vec<u64>],
    outputs: &[Vec<u64>],
    executions: &[Vec<bool>],
    ctx: &str,
) {
    let network = Network::new(plans.len());
    let mut engines: Vec<ScheduledExchange<Endpoint>> = (parts.into_iter().enumerate())
        .map(|(r, part)| ScheduledExchange::new(part, r, &network.endpoint(r)).expect("engine"))
        .collect();
    for (execution, in_place) in executions.iter().enumerate() {
        let context = || format!("execution {execution}, in place {in_place:?}: {ctx}");
        let rank_run = |r: usize, engine: &mut _, endpoint: &_| {
            let channel = Channel {
                transport: endpoint,
                tag: execution as i32,
            };
            execute_rank(&plans[r], engine, channel, &inputs[r], in_place[r])
        };
        let report = execute_all(&network, &mut engines, outputs, rank_run, &context);
        for (r, plan) in plans.iter().enumerate() {
            let received = plan.stats().bytes_received;
            let what = format!("rank {r} received: {}", context());
            assert_eq!(report.received[r], received, "{what}");
        }
    }
}

/// One rank's execution of its real in-place engine on fresh buffers holding
/// `input`'s bytes: in place in one buffer sized for both, else from an input to
/// an output buffer, the kept elements then copied; returns the output.
fn execute_rank<'n>(
    plan: &RankPlan,
    engine: &mut ScheduledExchange<Endpoint<'n>>,
    channel: Channel<'_, Endpoint<'n>>,
    input: &[u64],
    in_place: bool,
) -> Result<Vec<u8>, String> {
    let input = to_bytes(input);
    let out_bytes = plan.output_elems() as usize * 8;
    let (result, output) = if in_place {
        let mut buffer = input.clone();
        buffer.resize(input.len().max(out_bytes), 0xEE);
        let at = buffer.as_mut_ptr();
        // SAFETY: one buffer holding both the input and the output, alive until
        // the engine returns, every message then completed or cancelled.
        let buffers = Buffers::new(at, buffer.len(), at, buffer.len());
        let result = unsafe { engine.run(channel, &buffers) };
        buffer.truncate(out_bytes);
        (result, buffer)
    } else {
        let mut output = vec![0xEE; out_bytes];
        // SAFETY: distinct buffers of the input's and the output's sizes, alive
        // until the engine returns, every message then completed or cancelled.
        let buffers = Buffers::new(input.as_ptr(), input.len(), output.as_mut_ptr(), out_bytes);
        let result = unsafe { engine.run(channel, &buffers) };
        copy_kept(plan, &input, &mut output);
        (result, output)
    };
    result
        .map(|()| output)
        .map_err(|e| format!("rank {}: {e}", plan.rank))
}
