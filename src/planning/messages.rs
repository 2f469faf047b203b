//! The cutting of shared runs into bounded messages: sender and receiver cut the
//! same runs with the same limits, so their messages match one for one, and each
//! side places them in its own buffer. The runs are joint runs (contiguous in both
//! buffers, [`JointRuns`]), which both sides know alike, so a run long in both
//! buffers travels straight between them however short its global runs, and long
//! runs back to back in one buffer and at one stride in the other travel together
//! as [`StridedRuns`] says: through a strided datatype, or through the slot of the
//! side that holds the stride. Messages can be cut on the fly or cut once and
//! replayed.

use crate::distribution::joint_runs::{JointRun, JointRuns};
use crate::distribution::region::RegionRuns;

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
    /// Joint runs of at least this many bytes travel straight from the sender's
    /// buffer into the receiver's (they are contiguous on both sides): alone, or
    /// with the runs as long that follow them back to back in one buffer and at
    /// one stride in the other, as `strided_runs` says.
    pub direct_bytes: usize,
    /// Shorter joint runs of at least this many bytes, as long as the runs after
    /// them that follow back to back in the receiver's buffer and at one stride in
    /// the sender's, travel with those as one direct message (one strided send)
    /// when `strided_runs` is [`StridedRuns::StridedDatatypes`]; other short runs
    /// are packed (all of them when this is at least `direct_bytes`).
    pub strided_short_bytes: usize,
    /// Most bytes packed together from smaller runs, or from long ones at one stride
    /// with [`StridedRuns::Slots`] (the size of a staging slot).
    pub packed_bytes: usize,
    /// Most runs packed together.
    pub max_runs: usize,
    /// How long runs back to back in one buffer and at one stride in the other
    /// travel together.
    pub strided_runs: StridedRuns,
    /// Every message packed, whatever its runs' length (a plan with strided
    /// storage on some rank, [`MessageLimits::all_packed`]); `direct_bytes` then
    /// only says which streams have runs long enough to be read directly.
    pub packs_all: bool,
    /// In a batch, a message whose part of one field holds at least this many
    /// bytes travels as one message per field (each straight from or into its
    /// field's buffer, or its part of the slot); shorter ones carry every
    /// field's part in one message. MPICH moves a contiguous message in one
    /// copy but packs a datatype spanning several buffers.
    pub field_message_bytes: usize,
}

impl MessageLimits {
    /// The same limits with every message packed (through a slot wherever it is
    /// scattered or its side strided), runs longer than a slot cut into pieces:
    /// what a plan with strided storage on any rank cuts, since a strided side
    /// moves every message through its slot.
    pub fn all_packed(self) -> MessageLimits {
        MessageLimits {
            packs_all: true,
            strided_runs: StridedRuns::Slots,
            ..self
        }
    }

    /// The limits of one field's part of a message that carries `fields` fields
    /// (a batch): the byte caps shrink by `fields`, so that a message of every
    /// field's part stays within the caps (and a packed one within its slot);
    /// which runs travel straight, and how runs join, is unchanged.
    pub fn per_field(self, fields: usize) -> MessageLimits {
        let fields = fields.max(1);
        MessageLimits {
            max_bytes: self.max_bytes / fields,
            packed_bytes: self.packed_bytes / fields,
            ..self
        }
    }

    /// Bytes from which a joint run travels straight between the buffers: never
    /// when every message is packed.
    fn direct_from(&self) -> u64 {
        match self.packs_all {
            true => u64::MAX,
            false => self.direct_bytes as u64,
        }
    }
}

/// How long joint runs that follow one another back to back in one buffer, and at
/// one stride in the other, travel together: chosen by what was measured of the
/// MPI library (`crate::mpi::library`), the same on every rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StridedRuns {
    /// In one direct message received through a strided datatype when the
    /// receiver's buffer holds the stride; one message each when the sender's does.
    StridedReceives,
    /// In one direct message sent or received through a strided datatype,
    /// whichever buffer holds the stride.
    StridedDatatypes,
    /// Not together: each long run is a message of its own, contiguous at both
    /// ends, straight between the buffers.
    RunMessages,
    /// In one packed message through the slot of the side whose buffer holds the
    /// stride (packed there by a sender, unpacked from it by a receiver), so that
    /// every message is contiguous at both ends.
    Slots,
}

/// The buffer in which the joined runs of a message lie at one stride (they lie
/// back to back in the other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StridedIn {
    /// The receiver's: one contiguous send, one strided receive.
    Target,
    /// The sender's: one strided send, one contiguous receive.
    Source,
}

/// How the runs of a direct message follow its first: back to back in one buffer,
/// `step` elements apart in the other (`within`).
#[derive(Clone, Copy, Debug)]
struct Stride {
    within: StridedIn,
    step: u64,
}

/// What kind of message [`Messages::next_message`] cut (the same on both sides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageKind {
    /// Joint runs straight between the buffers: one (or a piece of one), or
    /// several as long, back to back in one buffer and at one stride in the other
    /// (on each side one segment, or segments of one length at one stride).
    Direct,
    /// Several joint runs through a slot, contiguous in at most one buffer: short
    /// ones, or long ones at one stride with [`StridedRuns::Slots`].
    Packed,
}

/// Where the runs of a stream lie in a local buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Placement {
    /// Where the elements lie in the buffer of the runs' source region (a sender's
    /// input).
    Source,
    /// Where the elements lie in the buffer of the runs' target region (a
    /// receiver's output).
    Target,
    /// Back to back from a byte offset (a packed staging buffer).
    Packed {
        /// Byte offset of the next run.
        next: usize,
    },
}

impl Placement {
    /// Byte offset of `run`, `bytes` long.
    fn place(&mut self, run: JointRun, bytes: usize, elem_size: usize) -> usize {
        match self {
            Placement::Source => run.source as usize * elem_size,
            Placement::Target => run.target as usize * elem_size,
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
    runs: JointRuns,
    placement: Placement,
    pending: Option<JointRun>,
    limits: MessageLimits,
    elem_size: usize,
}

impl MessageCutter {
    /// Cuts `runs` of elements of `elem_size` bytes, placed by `placement`, within
    /// `limits`.
    pub fn new(
        runs: RegionRuns,
        placement: Placement,
        elem_size: usize,
        limits: MessageLimits,
    ) -> MessageCutter {
        MessageCutter {
            runs: JointRuns::new(runs),
            placement,
            pending: None,
            limits,
            elem_size,
        }
    }

    /// Starts over with the same runs, placed by `placement`, allocating nothing.
    pub fn rewind(&mut self, placement: Placement) {
        self.runs.rewind();
        (self.placement, self.pending) = (placement, None);
    }

    /// Starts over as [`MessageCutter::rewind`] does, cutting within `limits`
    /// from now on (a batch's [`MessageLimits::per_field`]).
    pub fn recut(&mut self, placement: Placement, limits: MessageLimits) {
        self.rewind(placement);
        self.limits = limits;
    }

    fn take(&mut self) -> Option<JointRun> {
        self.pending.take().or_else(|| self.runs.next())
    }

    /// The first `most` elements of `run`; the rest waits for the next message.
    fn split(&mut self, run: JointRun, most: u64) -> JointRun {
        let (head, rest) = run.split(most);
        self.pending = rest;
        head
    }

    /// Joins to the message of `first` (whole) the runs after it that are as
    /// long, back to back in one buffer and at one stride in the other, within the
    /// limits (a slot's bytes when they travel through the slots); returns how
    /// many runs the message holds. The second run decides which buffer holds the
    /// stride: the target when it follows `first` in the source, else the source
    /// when [`StridedRuns`] lets the sender's buffer hold it and it follows
    /// `first` in the target. With `sends_only`, only runs at a stride in the
    /// source join.
    fn join_strided(
        &mut self,
        segments: &mut Vec<Segment>,
        first: JointRun,
        sends_only: bool,
    ) -> u64 {
        let run_bytes = first.len * self.elem_size as u64;
        let most_bytes = match self.limits.strided_runs {
            StridedRuns::Slots => self.limits.packed_bytes,
            _ => self.limits.max_bytes,
        };
        let most_runs = (most_bytes as u64 / run_bytes).min(self.limits.max_runs as u64);
        let (mut last, mut stride, mut runs) = (first, None::<Stride>, 1);
        while runs < most_runs {
            let Some(next) = self.take() else { break };
            let within = stride.map_or_else(|| self.strided_buffer(last, next), |s| s.within);
            if sends_only && within == StridedIn::Target {
                self.pending = Some(next);
                break;
            }
            let (back_to_back, step) = match within {
                StridedIn::Target => (
                    next.source == last.source + last.len,
                    next.target - last.target,
                ),
                StridedIn::Source => (
                    next.target == last.target + last.len,
                    next.source - last.source,
                ),
            };
            let follows =
                next.len == first.len && back_to_back && stride.is_none_or(|s| s.step == step);
            if !follows {
                self.pending = Some(next);
                break;
            }
            self.push(segments, next);
            (last, stride, runs) = (next, Some(Stride { within, step }), runs + 1);
        }
        runs
    }

    /// True when short runs of `run_bytes` may travel as one strided message
    /// ([`MessageLimits::strided_short_bytes`]).
    fn joins_short_runs(&self, run_bytes: u64) -> bool {
        self.limits.strided_runs == StridedRuns::StridedDatatypes
            && run_bytes >= self.limits.strided_short_bytes as u64
    }

    /// The buffer a message of joined runs holds at one stride, decided by its
    /// second run `next` after `last`: the source when [`StridedRuns`] lets the
    /// sender's buffer hold it and `next` follows `last` in the target only, else
    /// the target.
    fn strided_buffer(&self, last: JointRun, next: JointRun) -> StridedIn {
        let in_source = next.source == last.source + last.len;
        let in_target = next.target == last.target + last.len;
        let sender_strided = self.limits.strided_runs != StridedRuns::StridedReceives;
        if sender_strided && in_target && !in_source {
            StridedIn::Source
        } else {
            StridedIn::Target
        }
    }

    fn push(&mut self, segments: &mut Vec<Segment>, run: JointRun) {
        let len = run.len as usize * self.elem_size;
        let offset = self.placement.place(run, len, self.elem_size);
        push_coalesced(segments, Segment { offset, len });
    }
}

/// The messages of one stream, in order: cut on the fly by a [`MessageCutter`], or
/// replayed from messages cut once (`CutMessages`).
pub trait Messages {
    /// Replaces `segments` with the next message as coalesced byte segments of the
    /// local buffer and says what kind it is; `None` when no message is left.
    fn next_message(&mut self, segments: &mut Vec<Segment>) -> Option<MessageKind>;

    /// True when every message has been handed out.
    fn is_exhausted(&mut self) -> bool;

    /// Cuts the next round: up to `per_round` messages, ending early after a packed one
    /// (its staging slot is busy until the round completes), each handed to `post`
    /// with its kind as segments of the local buffer. Returns how many were cut, 0
    /// once the messages are exhausted. Both ends of a stream cut the same rounds.
    fn next_round<E>(
        &mut self,
        segments: &mut Vec<Segment>,
        per_round: usize,
        mut post: impl FnMut(MessageKind, &[Segment]) -> Result<(), E>,
    ) -> Result<usize, E> {
        for posted in 0..per_round {
            let Some(kind) = self.next_message(segments) else {
                return Ok(posted);
            };
            post(kind, segments)?;
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
        if first.len * size >= self.limits.direct_from() {
            let most = (self.limits.max_bytes as u64 / size).max(1);
            let piece = self.split(first, most);
            self.push(segments, piece);
            let joins =
                self.pending.is_none() && self.limits.strided_runs != StridedRuns::RunMessages;
            let runs = match joins {
                true => self.join_strided(segments, piece, false),
                false => 1,
            };
            let slotted = runs > 1 && self.limits.strided_runs == StridedRuns::Slots;
            return Some(if slotted {
                MessageKind::Packed
            } else {
                MessageKind::Direct
            });
        }
        let first = self.split(first, (self.limits.packed_bytes as u64 / size).max(1));
        let mut bytes = first.len * size;
        self.push(segments, first);
        if self.joins_short_runs(bytes) && self.join_strided(segments, first, true) > 1 {
            return Some(MessageKind::Direct);
        }
        for _ in 1..self.limits.max_runs {
            let Some(run) = self.take() else { break };
            let run_bytes = run.len * size;
            if run_bytes >= self.limits.direct_from()
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

    /// Bytes of the largest packed message that goes through a staging slot on
    /// this side: scattered over several segments, or any when the side is
    /// `strided` (its box not stored in C order without gaps).
    pub fn largest_packed_bytes(&self, strided: bool) -> usize {
        let mut start = 0;
        let mut largest = 0;
        for &(end, kind) in &self.ends {
            if (strided || end - start > 1) && kind == MessageKind::Packed {
                largest = largest.max(self.segments[start..end].iter().map(|s| s.len).sum());
            }
            start = end;
        }
        largest
    }

    /// Bytes of the largest message, of either kind (the same at both ends of a
    /// stream, whose messages match one for one).
    pub fn largest_message_bytes(&self) -> usize {
        let mut start = 0;
        let mut largest = 0;
        for &(end, _) in &self.ends {
            largest = largest.max(self.segments[start..end].iter().map(|s| s.len).sum());
            start = end;
        }
        largest
    }

    /// Every kept segment, message after message, in the order they were cut.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Replays the messages from the `next`-th on, each as the segments it was
    /// cut into.
    pub fn replay(&self, next: usize) -> Replay<'_> {
        Replay {
            messages: self,
            next,
            packed_at: None,
        }
    }

    /// Replays the messages from the `next`-th on placed back to back from byte
    /// `at` of a packed buffer (the messages cut with [`Placement::Packed`]): each
    /// one segment as long as the message.
    pub fn replay_packed(&self, next: usize, at: usize) -> Replay<'_> {
        Replay {
            messages: self,
            next,
            packed_at: Some(at),
        }
    }
}

/// A cursor over [`CutMessages`].
#[derive(Debug)]
pub struct Replay<'a> {
    messages: &'a CutMessages,
    next: usize,
    /// Where the next message starts in a packed buffer, when replayed packed.
    packed_at: Option<usize>,
}

impl Replay<'_> {
    /// Index of the next message to hand out.
    pub fn position(&self) -> usize {
        self.next
    }

    /// Where the next message starts in the packed buffer, when replayed packed.
    pub fn packed_position(&self) -> Option<usize> {
        self.packed_at
    }
}

impl Messages for Replay<'_> {
    fn next_message(&mut self, segments: &mut Vec<Segment>) -> Option<MessageKind> {
        let &(end, kind) = self.messages.ends.get(self.next)?;
        let start = self
            .next
            .checked_sub(1)
            .map_or(0, |i| self.messages.ends[i].0);
        let cut = &self.messages.segments[start..end];
        segments.clear();
        match &mut self.packed_at {
            Some(at) => {
                let len = cut.iter().map(|s| s.len).sum();
                segments.push(Segment { offset: *at, len });
                *at += len;
            }
            None => segments.extend_from_slice(cut),
        }
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
    use crate::distribution::region::test_regions::{RegionPair, region_pair};
    use proptest::prelude::*;

    fn any_strided_runs() -> impl Strategy<Value = StridedRuns> {
        prop_oneof![
            Just(StridedRuns::StridedReceives),
            Just(StridedRuns::StridedDatatypes),
            Just(StridedRuns::RunMessages),
            Just(StridedRuns::Slots),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn kept_messages_replay_what_the_cutter_cuts(
            pair in region_pair(), budget in 0usize..40, strided_runs in any_strided_runs(),
            strided_short_bytes in 1usize..16
        ) {
            let RegionPair { a, b, .. } = pair;
            let limits = MessageLimits { max_bytes: 24, direct_bytes: 12, strided_short_bytes, packed_bytes: 24, max_runs: 3, strided_runs, packs_all: false, field_message_bytes: usize::MAX };
            let cutter = || MessageCutter::new(RegionRuns::new(&a, &b), Placement::Source, 4, limits);
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

        /// A batch of `fields` replays a stream's kept messages when every one fits
        /// the per-field caps, and the other end, which may not have kept them,
        /// cuts them anew with those caps: the two must be the same messages.
        #[test]
        fn messages_that_fit_the_per_field_caps_are_the_per_field_cut(
            pair in region_pair(), max_bytes in 4usize..80, direct in 4usize..40, packed in 4usize..80,
            max_runs in 1usize..6, strided_runs in any_strided_runs(), strided_short_bytes in 1usize..16,
            fields in 2usize..6, packs_all in any::<bool>()
        ) {
            let RegionPair { a, b, .. } = pair;
            let packed_bytes = packed.min(max_bytes);
            let limits = MessageLimits { max_bytes, direct_bytes: direct.min(packed_bytes), strided_short_bytes, packed_bytes, max_runs, strided_runs, packs_all, field_message_bytes: usize::MAX };
            let cut = |limits| {
                let mut cutter = MessageCutter::new(RegionRuns::new(&a, &b), Placement::Target, 4, limits);
                let (mut segs, mut messages) = (Vec::new(), Vec::new());
                while let Some(kind) = cutter.next_message(&mut segs) {
                    messages.push((kind, segs.clone()));
                }
                messages
            };
            let whole = cut(limits);
            let largest = whole.iter().map(|(_, s)| s.iter().map(|s| s.len).sum::<usize>()).max().unwrap_or(0);
            if largest * fields <= packed_bytes {
                prop_assert_eq!(cut(limits.per_field(fields)), whole);
            }
            let mut recut = MessageCutter::new(RegionRuns::new(&a, &b), Placement::Source, 4, limits);
            recut.recut(Placement::Target, limits.per_field(fields));
            let (mut segs, mut again) = (Vec::new(), Vec::new());
            while let Some(kind) = recut.next_message(&mut segs) {
                again.push((kind, segs.clone()));
            }
            prop_assert_eq!(again, cut(limits.per_field(fields)));
        }

        #[test]
        fn packed_replay_places_what_the_cutter_places_packed(
            pair in region_pair(), strided_runs in any_strided_runs(), at in 0usize..100
        ) {
            let RegionPair { a, b, .. } = pair;
            let limits = MessageLimits { max_bytes: 24, direct_bytes: 12, strided_short_bytes: 8, packed_bytes: 24, max_runs: 3, strided_runs, packs_all: false, field_message_bytes: usize::MAX };
            let cutter = |placement| MessageCutter::new(RegionRuns::new(&a, &b), placement, 4, limits);
            let mut packed = cutter(Placement::Packed { next: at });
            let (mut want, mut segs) = (Vec::new(), Vec::new());
            while let Some(kind) = packed.next_message(&mut segs) {
                want.push((kind, segs.clone()));
            }
            let kept = CutMessages::cut(cutter(Placement::Source), usize::MAX, &mut segs).unwrap().unwrap();
            let mut got = Vec::new();
            let mut replay = kept.replay_packed(0, at);
            while let Some(kind) = replay.next_message(&mut segs) {
                got.push((kind, segs.clone()));
                // A round ends anywhere: resuming from the positions goes on alike.
                replay = kept.replay_packed(replay.position(), replay.packed_position().unwrap());
            }
            prop_assert_eq!(got, want);
        }

        #[test]
        fn messages_respect_limits_and_cover_the_runs(
            pair in region_pair(), max_bytes in 1usize..40, direct in 1usize..40, packed in 1usize..40,
            max_runs in 1usize..4, strided_runs in any_strided_runs(), strided_short_bytes in 1usize..40
        ) {
            let RegionPair { a, b, a_members, b_members } = pair;
            let packed_bytes = packed.min(max_bytes);
            let limits = MessageLimits { max_bytes, direct_bytes: direct.min(packed_bytes), strided_short_bytes, packed_bytes, max_runs, strided_runs, packs_all: false, field_message_bytes: usize::MAX };
            let mut cutter = MessageCutter::new(RegionRuns::new(&a, &b), Placement::Source, 4, limits);
            let mut segs = Vec::new();
            let mut covered = Vec::new();
            while let Some(kind) = cutter.next_message(&mut segs) {
                let bytes: usize = segs.iter().map(|s| s.len).sum();
                match kind {
                    MessageKind::Direct => prop_assert!(bytes <= max_bytes.max(4) && segs.len() <= max_runs),
                    MessageKind::Packed => prop_assert!(bytes <= packed_bytes.max(4) && segs.len() <= max_runs),
                }
                covered.extend(segs.iter().flat_map(|s| (s.offset / 4)..(s.offset + s.len) / 4));
            }
            let want: Vec<usize> = a_members
                .iter()
                .enumerate()
                .filter(|(_, g)| b_members.contains(g))
                .map(|(i, _)| i)
                .collect();
            prop_assert_eq!(covered, want);
        }

        #[test]
        fn direct_messages_are_contiguous_in_one_buffer_and_strided_in_the_other(
            pair in region_pair(), max_bytes in 4usize..80, direct in 4usize..16, packed in 4usize..80,
            max_runs in 1usize..6, strided_runs in any_strided_runs(), strided_short_bytes in 1usize..16
        ) {
            let RegionPair { a, b, .. } = pair;
            let packed_bytes = packed.clamp(direct, max_bytes.max(direct));
            let limits = MessageLimits { max_bytes, direct_bytes: direct, strided_short_bytes, packed_bytes, max_runs, strided_runs, packs_all: false, field_message_bytes: usize::MAX };
            let cut = |placement| {
                let mut cutter = MessageCutter::new(RegionRuns::new(&a, &b), placement, 4, limits);
                let (mut segs, mut messages) = (Vec::new(), Vec::new());
                while let Some(kind) = cutter.next_message(&mut segs) {
                    messages.push((kind, segs.clone()));
                }
                messages
            };
            let (sent, received) = (cut(Placement::Source), cut(Placement::Target));
            prop_assert_eq!(sent.len(), received.len());
            for ((kind, source), (other, target)) in sent.iter().zip(&received) {
                prop_assert_eq!(kind, other);
                let bytes: usize = target.iter().map(|s| s.len).sum();
                prop_assert_eq!(bytes, source.iter().map(|s| s.len).sum::<usize>());
                if *kind == MessageKind::Direct {
                    let strided = match (source.len(), target.len(), strided_runs) {
                        (1, 1, _) => target,
                        (_, _, StridedRuns::Slots | StridedRuns::RunMessages) => return Err(TestCaseError::fail(format!("strided direct {source:?} {target:?}"))),
                        (1, _, _) => target,
                        (_, _, StridedRuns::StridedDatatypes) => source,
                        (_, _, StridedRuns::StridedReceives) => return Err(TestCaseError::fail(format!("strided send {source:?}"))),
                    };
                    if strided.len() > 1 && strided[0].len < direct {
                        let short_send = strided_runs == StridedRuns::StridedDatatypes
                            && std::ptr::eq(strided, source) && strided[0].len >= strided_short_bytes;
                        prop_assert!(short_send, "short runs join as strided sends only: {:?} {:?}", source, target);
                    }
                    let contiguous = if source.len() == 1 { source } else { target };
                    prop_assert_eq!(contiguous.len(), 1, "contiguous on one side: {:?}", contiguous);
                    prop_assert!(bytes <= max_bytes.max(4) && strided.len() <= max_runs);
                    let stride = strided.get(1).map(|s| s.offset - strided[0].offset);
                    for (i, seg) in strided.iter().enumerate() {
                        prop_assert_eq!(seg.len, strided[0].len);
                        prop_assert_eq!(seg.offset, strided[0].offset + i * stride.unwrap_or(0));
                    }
                }
            }
        }
    }
}
