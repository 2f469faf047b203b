//! Intersections of block patterns: how many elements two ranks share, the maximal
//! runs they share in global order, and the cutting of those runs into bounded
//! messages. Computed analytically from the patterns, never per element.

use std::ops::Range;

use crate::layout::Pattern;

/// A maximal run of consecutive global indices shared by two patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    /// Global flat index of the first element.
    pub global: u64,
    /// Number of elements.
    pub len: u64,
}

/// Orders two patterns as (fewer blocks, more blocks): iterating the blocks of the
/// first and locating the second's by arithmetic costs O(min(blocks) + runs).
fn by_block_count(a: Pattern, b: Pattern) -> (Pattern, Pattern) {
    if a.count <= b.count { (a, b) } else { (b, a) }
}

/// Number of elements two patterns share.
pub fn shared_elements(a: &Pattern, b: &Pattern) -> u64 {
    if a.is_empty() || b.is_empty() {
        return 0;
    }
    if same_period(a, b) {
        return a.count * overlap(a.block(0), b.block(0));
    }
    let (few, many) = by_block_count(*a, *b);
    let shared_in = |o: u64| {
        let block = few.block(o);
        many.elements_below(block.end) - many.elements_below(block.start)
    };
    let blocks = few.blocks_overlapping(many.start, many.end());
    let Some((periodic, period)) = periodic_blocks(&few, &many, blocks.clone()) else {
        return blocks.map(shared_in).sum();
    };
    let periods = (periodic.end - periodic.start) / period;
    let rest = periodic.start + periods * period;
    let one_period: u64 = (periodic.start..periodic.start + period)
        .map(shared_in)
        .sum();
    (blocks.start..periodic.start).map(shared_in).sum::<u64>()
        + periods * one_period
        + (rest..blocks.end).map(shared_in).sum::<u64>()
}

/// The blocks of `few` over which what they share with `many` repeats every
/// `period` blocks, when that saves work. Moving `period` blocks along `few` moves
/// by a whole number `m` of strides of `many`, and `many.elements_below(x + m*stride)`
/// is `elements_below(x) + m*block_len` while `x` stays in its first `count - m`
/// periods; so blocks starting after `many.start` and ending (with their shifted copy)
/// within `many` share the same amount as the block `period` before them.
fn periodic_blocks(few: &Pattern, many: &Pattern, blocks: Range<u64>) -> Option<(Range<u64>, u64)> {
    let period = many.stride / gcd(few.stride, many.stride);
    let m = period.checked_mul(few.stride)? / many.stride;
    if many.count <= m {
        return None;
    }
    let first = blocks
        .start
        .max(many.start.saturating_sub(few.start).div_ceil(few.stride));
    let limit = many.start + (many.count - m) * many.stride;
    let last = limit
        .checked_sub(few.start + few.block_len)
        .map_or(0, |room| (room / few.stride + 1).min(few.count));
    let end = (last + period).min(blocks.end);
    (first < last && end >= first + 2 * period).then_some((first..end, period))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// True when the patterns repeat with the same period and a block of one can only
/// meet the block of the same index in the other (slabs of one layout family).
fn same_period(a: &Pattern, b: &Pattern) -> bool {
    a.count > 1
        && a.count == b.count
        && a.stride == b.stride
        && a.start + a.block_len <= b.start + b.stride
        && b.start + b.block_len <= a.start + a.stride
}

fn overlap(a: std::ops::Range<u64>, b: std::ops::Range<u64>) -> u64 {
    a.end.min(b.end).saturating_sub(a.start.max(b.start))
}

/// Iterator over the maximal runs shared by two patterns, in increasing global order.
#[derive(Clone, Debug)]
pub struct SharedRuns {
    few: Pattern,
    many: Pattern,
    block: u64,
    end_block: u64,
    other: u64,
}

impl SharedRuns {
    /// The runs shared by `a` and `b`.
    pub fn new(a: &Pattern, b: &Pattern) -> SharedRuns {
        let (few, many) = by_block_count(*a, *b);
        let blocks = if many.is_empty() {
            0..0
        } else {
            few.blocks_overlapping(many.start, many.end())
        };
        SharedRuns {
            few,
            many,
            block: blocks.start,
            end_block: blocks.end,
            other: 0,
        }
    }
}

impl Iterator for SharedRuns {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        while self.block < self.end_block {
            let outer = self.few.block(self.block);
            self.other = self
                .other
                .max(self.many.first_block_ending_after(outer.start));
            if self.other < self.many.count {
                let inner = self.many.block(self.other);
                if inner.start < outer.end {
                    let start = outer.start.max(inner.start);
                    let end = outer.end.min(inner.end);
                    if inner.end <= outer.end {
                        self.other += 1;
                    } else {
                        self.block += 1;
                    }
                    return Some(Run {
                        global: start,
                        len: end - start,
                    });
                }
            }
            self.block += 1;
        }
        None
    }
}

impl SharedRuns {
    /// The same runs in decreasing global order.
    pub fn descending(self) -> SharedRunsDescending {
        let other = self.many.count;
        SharedRunsDescending { runs: self, other }
    }
}

/// Iterator over the maximal runs shared by two patterns, in decreasing global order
/// (see [`SharedRuns::descending`]).
#[derive(Clone, Debug)]
pub struct SharedRunsDescending {
    runs: SharedRuns,
    /// One past the index of the inner block to look at next.
    other: u64,
}

impl Iterator for SharedRunsDescending {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        let r = &mut self.runs;
        while r.end_block > r.block {
            let outer = r.few.block(r.end_block - 1);
            self.other = self.other.min(r.many.blocks_starting_before(outer.end));
            if self.other > 0 {
                let inner = r.many.block(self.other - 1);
                if inner.end > outer.start {
                    let start = outer.start.max(inner.start);
                    let end = outer.end.min(inner.end);
                    if inner.start >= outer.start {
                        self.other -= 1;
                    } else {
                        r.end_block -= 1;
                    }
                    return Some(Run {
                        global: start,
                        len: end - start,
                    });
                }
            }
            r.end_block -= 1;
        }
        None
    }
}

/// A contiguous piece of a local buffer, in bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Byte offset from the start of the local buffer.
    pub offset: usize,
    /// Length in bytes.
    pub len: usize,
}

/// How shared runs are cut into messages. Sender and receiver use the same limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageLimits {
    /// Most bytes in one message (MPI counts are 32-bit).
    pub max_bytes: usize,
    /// Runs of at least this many bytes travel alone, straight from the sender's
    /// buffer into the receiver's (runs are contiguous on both sides).
    pub direct_bytes: usize,
    /// Most bytes packed together from smaller runs (the size of a staging slot).
    pub packed_bytes: usize,
    /// Most runs packed together.
    pub max_runs: usize,
}

/// What kind of message [`Messages::next_message`] cut (the same on both sides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// One run (or a piece of one), contiguous in both buffers.
    Direct,
    /// Several small runs, contiguous in neither buffer in general.
    Packed,
}

/// Where the runs of a stream lie in a local buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Where the rank's elements lie in its input or output buffer.
    Pattern(Pattern),
    /// Back to back from a byte offset (a packed staging buffer).
    Packed {
        /// Byte offset of the next run.
        next: usize,
    },
}

impl Placement {
    /// Byte offset of the run starting at `global`, `bytes` long.
    fn place(&mut self, global: u64, bytes: usize, elem_size: usize) -> usize {
        match self {
            Placement::Pattern(p) => p.local_offset(global) as usize * elem_size,
            Placement::Packed { next } => {
                *next += bytes;
                *next - bytes
            }
        }
    }
}

/// Cuts the shared runs of a pair of ranks into messages. Sender and receiver cut the
/// same global runs with the same limits, so their messages match one for one; each
/// side places the runs in its own buffer.
#[derive(Clone, Debug)]
pub struct MessageCutter {
    runs: SharedRuns,
    placement: Placement,
    pending: Option<Run>,
    limits: MessageLimits,
    elem_size: usize,
}

impl MessageCutter {
    /// Cuts `runs` of elements of `elem_size` bytes, placed by `placement`, within
    /// `limits`.
    pub fn new(
        runs: SharedRuns,
        placement: Placement,
        elem_size: usize,
        limits: MessageLimits,
    ) -> MessageCutter {
        MessageCutter {
            runs,
            placement,
            pending: None,
            limits,
            elem_size,
        }
    }

    fn take(&mut self) -> Option<Run> {
        self.pending.take().or_else(|| self.runs.next())
    }

    /// The first `most` elements of `run`; the rest waits for the next message.
    fn split(&mut self, run: Run, most: u64) -> Run {
        if run.len <= most {
            return run;
        }
        self.pending = Some(Run {
            global: run.global + most,
            len: run.len - most,
        });
        Run {
            global: run.global,
            len: most,
        }
    }

    fn push(&mut self, segments: &mut Vec<Segment>, run: Run) {
        let len = run.len as usize * self.elem_size;
        let offset = self.placement.place(run.global, len, self.elem_size);
        push_coalesced(segments, Segment { offset, len });
    }
}

/// The messages of one stream, in order: cut on the fly by a [`MessageCutter`], or
/// replayed from messages cut once ([`CutMessages`]).
pub trait Messages {
    /// Replaces `segments` with the next message as coalesced byte segments of the
    /// local buffer and says what kind it is; `None` when no message is left.
    fn next_message(&mut self, segments: &mut Vec<Segment>) -> Option<MessageKind>;

    /// True when every message has been handed out.
    fn is_exhausted(&mut self) -> bool;

    /// Cuts the next round: up to `per_round` messages, ending early after a packed one
    /// (its staging slot is busy until the round completes), each handed to `post` as
    /// segments of the local buffer. Returns how many were cut, 0 once the messages
    /// are exhausted. Both ends of a stream cut the same rounds.
    fn next_round<E>(
        &mut self,
        segments: &mut Vec<Segment>,
        per_round: usize,
        mut post: impl FnMut(&[Segment]) -> Result<(), E>,
    ) -> Result<usize, E> {
        for posted in 0..per_round {
            let Some(kind) = self.next_message(segments) else {
                return Ok(posted);
            };
            post(segments)?;
            if kind == MessageKind::Packed {
                return Ok(posted + 1);
            }
        }
        Ok(per_round)
    }
}

impl Messages for MessageCutter {
    fn next_message(&mut self, segments: &mut Vec<Segment>) -> Option<MessageKind> {
        segments.clear();
        let first = self.take()?;
        let size = self.elem_size as u64;
        if first.len * size >= self.limits.direct_bytes as u64 {
            let most = (self.limits.max_bytes as u64 / size).max(1);
            let piece = self.split(first, most);
            self.push(segments, piece);
            return Some(MessageKind::Direct);
        }
        let mut bytes = first.len * size;
        self.push(segments, first);
        for _ in 1..self.limits.max_runs {
            let Some(run) = self.take() else { break };
            let run_bytes = run.len * size;
            if run_bytes >= self.limits.direct_bytes as u64
                || bytes + run_bytes > self.limits.packed_bytes as u64
            {
                self.pending = Some(run);
                break;
            }
            bytes += run_bytes;
            self.push(segments, run);
        }
        Some(MessageKind::Packed)
    }

    /// True when every run has been cut into messages.
    fn is_exhausted(&mut self) -> bool {
        if self.pending.is_none() {
            self.pending = self.runs.next();
        }
        self.pending.is_none()
    }
}

/// The messages of one stream cut once and kept (16 bytes per segment), so that
/// repeated executions replay them instead of cutting the runs again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CutMessages {
    segments: Vec<Segment>,
    /// Where each message's segments end, and its kind.
    ends: Vec<(usize, MessageKind)>,
}

impl CutMessages {
    /// Every message of `cutter`, or `None` when they hold more than `budget`
    /// segments (cutting stops there). `scratch` holds one message while it is cut.
    pub fn cut(
        mut cutter: MessageCutter,
        budget: usize,
        scratch: &mut Vec<Segment>,
    ) -> std::result::Result<Option<CutMessages>, std::collections::TryReserveError> {
        let mut cut = CutMessages::default();
        while let Some(kind) = cutter.next_message(scratch) {
            if cut.segments.len() + scratch.len() > budget {
                return Ok(None);
            }
            cut.segments.try_reserve(scratch.len())?;
            cut.segments.extend_from_slice(scratch);
            cut.ends.try_reserve(1)?;
            cut.ends.push((cut.segments.len(), kind));
        }
        Ok(Some(cut))
    }

    /// Number of segments kept.
    pub fn segment_count(&self) -> usize {
        self.segments.len()
    }

    /// Bytes of the largest message scattered over several segments on this side
    /// (the largest that goes through a staging slot).
    pub fn largest_scattered_bytes(&self) -> usize {
        let mut start = 0;
        let mut largest = 0;
        for &(end, _) in &self.ends {
            if end - start > 1 {
                largest = largest.max(self.segments[start..end].iter().map(|s| s.len).sum());
            }
            start = end;
        }
        largest
    }

    /// Replays the messages from the `next`-th on.
    pub fn replay(&self, next: usize) -> Replay<'_> {
        Replay {
            messages: self,
            next,
        }
    }
}

/// A cursor over [`CutMessages`].
#[derive(Debug)]
pub struct Replay<'a> {
    messages: &'a CutMessages,
    next: usize,
}

impl Replay<'_> {
    /// Index of the next message to hand out.
    pub fn position(&self) -> usize {
        self.next
    }
}

impl Messages for Replay<'_> {
    fn next_message(&mut self, segments: &mut Vec<Segment>) -> Option<MessageKind> {
        let &(end, kind) = self.messages.ends.get(self.next)?;
        let start = self
            .next
            .checked_sub(1)
            .map_or(0, |i| self.messages.ends[i].0);
        segments.clear();
        segments.extend_from_slice(&self.messages.segments[start..end]);
        self.next += 1;
        Some(kind)
    }

    fn is_exhausted(&mut self) -> bool {
        self.next == self.messages.ends.len()
    }
}

/// Appends `seg`, merging it into the last segment when they are adjacent.
pub fn push_coalesced(segments: &mut Vec<Segment>, seg: Segment) {
    match segments.last_mut() {
        Some(last) if last.offset + last.len == seg.offset => last.len += seg.len,
        _ => segments.push(seg),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn members(p: &Pattern) -> Vec<u64> {
        (0..p.count).flat_map(|o| p.block(o)).collect()
    }

    fn pattern() -> impl Strategy<Value = Pattern> {
        (0u64..12, 0u64..6, 1u64..9, 0u64..40)
            .prop_map(|(start, len, gap, count)| Pattern::blocks(start, len, len + gap, count))
    }

    #[test]
    fn periodic_counting_matches_brute_force() {
        let cases = [
            (Pattern::blocks(0, 3, 10, 50), Pattern::blocks(2, 4, 5, 100)),
            (Pattern::blocks(7, 2, 6, 40), Pattern::blocks(1, 3, 4, 70)),
            (
                Pattern::blocks(100, 1000, 100_000, 100),
                Pattern::blocks(0, 50_000, 1_000_000, 10),
            ),
        ];
        for (a, b) in cases {
            let (few, many) = by_block_count(a, b);
            let blocks = few.blocks_overlapping(many.start, many.end());
            assert!(
                periodic_blocks(&few, &many, blocks).is_some(),
                "{a:?} {b:?}"
            );
            let bset: std::collections::HashSet<u64> = members(&b).into_iter().collect();
            let want = members(&a).iter().filter(|g| bset.contains(g)).count() as u64;
            assert_eq!(shared_elements(&a, &b), want);
            assert_eq!(shared_elements(&b, &a), want);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn shared_runs_are_the_exact_maximal_intersection(a in pattern(), b in pattern()) {
            let bset = members(&b);
            let want: Vec<u64> = members(&a).into_iter().filter(|g| bset.contains(g)).collect();
            let runs: Vec<Run> = SharedRuns::new(&a, &b).collect();
            let got: Vec<u64> = runs.iter().flat_map(|r| r.global..r.global + r.len).collect();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(shared_elements(&a, &b), want.len() as u64);
            let mut reversed: Vec<Run> = SharedRuns::new(&a, &b).descending().collect();
            reversed.reverse();
            prop_assert_eq!(&reversed, &runs);
            for w in runs.windows(2) {
                prop_assert!(w[0].global + w[0].len < w[1].global, "runs not maximal: {:?}", w);
            }
        }

        #[test]
        fn kept_messages_replay_what_the_cutter_cuts(a in pattern(), b in pattern(), budget in 0usize..40) {
            let limits = MessageLimits { max_bytes: 24, direct_bytes: 12, packed_bytes: 24, max_runs: 3 };
            let cutter = || MessageCutter::new(SharedRuns::new(&a, &b), Placement::Pattern(a), 4, limits);
            let mut fresh = cutter();
            let (mut want, mut segs) = (Vec::new(), Vec::new());
            while let Some(kind) = fresh.next_message(&mut segs) {
                want.push((kind, segs.clone()));
            }
            let total: usize = want.iter().map(|(_, s)| s.len()).sum();
            let kept = CutMessages::cut(cutter(), budget, &mut segs).unwrap();
            prop_assert_eq!(kept.is_some(), total <= budget);
            if let Some(kept) = kept {
                prop_assert_eq!(kept.segment_count(), total);
                let mut replay = kept.replay(0);
                let mut got = Vec::new();
                while let Some(kind) = replay.next_message(&mut segs) {
                    got.push((kind, segs.clone()));
                }
                prop_assert!(replay.is_exhausted());
                prop_assert_eq!(got, want);
            }
        }

        #[test]
        fn messages_respect_limits_and_cover_the_runs(
            a in pattern(), b in pattern(), max_bytes in 1usize..40, direct in 1usize..40, max_runs in 1usize..4
        ) {
            let packed_bytes = max_bytes.max(direct);
            let limits = MessageLimits { max_bytes, direct_bytes: direct.min(packed_bytes), packed_bytes, max_runs };
            let mut cutter = MessageCutter::new(SharedRuns::new(&a, &b), Placement::Pattern(a), 4, limits);
            let mut segs = Vec::new();
            let mut covered = Vec::new();
            while let Some(kind) = cutter.next_message(&mut segs) {
                let bytes: usize = segs.iter().map(|s| s.len).sum();
                match kind {
                    MessageKind::Direct => prop_assert!(segs.len() == 1 && bytes <= max_bytes.max(4)),
                    MessageKind::Packed => prop_assert!(bytes <= packed_bytes.max(4) && segs.len() <= max_runs),
                }
                covered.extend(segs.iter().flat_map(|s| (s.offset / 4)..(s.offset + s.len) / 4));
            }
            let bset = members(&b);
            let want: Vec<usize> = members(&a)
                .iter()
                .enumerate()
                .filter(|(_, g)| bset.contains(g))
                .map(|(i, _)| i)
                .collect();
            prop_assert_eq!(covered, want);
        }
    }
}
