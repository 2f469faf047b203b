//! The shared runs of two regions as stretches of their buffers: consecutive global
//! runs that also follow one another in both boxes' buffers join one run. A pencil
//! transpose shares runs of one axis's block globally (1 KiB), which lie back to
//! back in both pencils over the whole plane (256 KiB): what a message can move
//! straight between the buffers is the joint run, not the global one.

use std::borrow::BorrowMut;

use crate::distribution::region::RegionRuns;
use crate::distribution::runs::Run;

/// A stretch of shared elements contiguous in both regions' buffers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JointRun {
    /// Offset of its first element in the source region's buffer, in elements.
    pub source: u64,
    /// Offset of its first element in the target region's buffer, in elements.
    pub target: u64,
    /// Number of elements.
    pub len: u64,
}

impl JointRun {
    /// The first `most` elements of the run and what follows them (`None` when the
    /// run is no longer).
    pub fn split(self, most: u64) -> (JointRun, Option<JointRun>) {
        if self.len <= most {
            return (self, None);
        }
        let rest = JointRun {
            source: self.source + most,
            target: self.target + most,
            len: self.len - most,
        };
        (JointRun { len: most, ..self }, Some(rest))
    }

    /// True when `next` starts right after this run in both buffers.
    fn continues_into(&self, next: &JointRun) -> bool {
        next.source == self.source + self.len && next.target == self.target + self.len
    }
}

/// The runs of a [`RegionRuns`] (owned, or borrowed to be rewound by its owner) in
/// their order, joined where they are contiguous in both buffers, which needs an
/// increasing order. Lazy: O(ndims) per global run.
#[derive(Clone, Debug)]
pub struct JointRuns<R = RegionRuns> {
    runs: R,
    /// The global run read past the end of the joint run last yielded.
    ahead: Option<JointRun>,
}

impl<R: BorrowMut<RegionRuns>> JointRuns<R> {
    /// The joint runs of `runs`.
    pub fn new(runs: R) -> JointRuns<R> {
        JointRuns { runs, ahead: None }
    }

    /// Starts over, allocating nothing.
    pub fn rewind(&mut self) {
        self.runs.borrow_mut().rewind();
        self.ahead = None;
    }

    /// The global run `run` placed in both buffers.
    fn placed(&self, run: Run) -> JointRun {
        let runs = self.runs.borrow();
        JointRun {
            source: runs.source().local_offset(run.global),
            target: runs.target().local_offset(run.global),
            len: run.len,
        }
    }

    fn next_global(&mut self) -> Option<JointRun> {
        let run = self.runs.borrow_mut().next()?;
        Some(self.placed(run))
    }
}

impl<R: BorrowMut<RegionRuns>> Iterator for JointRuns<R> {
    type Item = JointRun;

    fn next(&mut self) -> Option<JointRun> {
        let mut joint = self.ahead.take().or_else(|| self.next_global())?;
        while let Some(next) = self.next_global() {
            if !joint.continues_into(&next) {
                self.ahead = Some(next);
                break;
            }
            joint.len += next.len;
        }
        Some(joint)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::distribution::region::test_regions::{RegionPair, region_pair};
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]
        #[test]
        fn joint_runs_are_the_maximal_stretches_shared_in_both_buffers(pair in region_pair()) {
            let RegionPair { a, b, a_members, b_members } = pair;
            let runs: Vec<JointRun> = JointRuns::new(RegionRuns::new(&a, &b)).collect();
            let mut shared = Vec::new();
            for run in &runs {
                let (s, t, n) = (run.source as usize, run.target as usize, run.len as usize);
                prop_assert!(n > 0);
                prop_assert_eq!(&a_members[s..s + n], &b_members[t..t + n]);
                shared.extend_from_slice(&a_members[s..s + n]);
            }
            for pair in runs.windows(2) {
                prop_assert!(!pair[0].continues_into(&pair[1]), "not maximal: {:?}", pair);
            }
            let want: Vec<u64> = a_members.iter().copied().filter(|g| b_members.contains(g)).collect();
            prop_assert_eq!(shared, want);
        }
    }

    #[test]
    fn a_split_keeps_both_buffers_in_step() {
        let run = JointRun {
            source: 10,
            target: 40,
            len: 7,
        };
        let (head, rest) = run.split(3);
        assert_eq!(
            head,
            JointRun {
                source: 10,
                target: 40,
                len: 3
            }
        );
        assert_eq!(
            rest,
            Some(JointRun {
                source: 13,
                target: 43,
                len: 4
            })
        );
        assert_eq!(run.split(7), (run, None));
    }
}
