//! Seeds: every case is generated from its own 64-bit seed, derived from the
//! run's seed, the invariant and the case index, so one seed regenerates one
//! case (`parity fuzz --replay INVARIANT:SEED`) with no other state.

use crate::seed::mix;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// The seed of case `index` of `invariant` in a run seeded `run_seed`.
pub fn case_seed(run_seed: u64, invariant: &str, index: usize) -> u64 {
    let tag = invariant.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    mix(run_seed ^ mix(tag ^ index as u64))
}

/// A proptest runner whose randomness is exactly `seed`.
pub fn runner(seed: u64) -> TestRunner {
    let mut bytes = [0u8; 32];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        chunk.copy_from_slice(&mix(seed.wrapping_add(i as u64)).to_le_bytes());
    }
    TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &bytes),
    )
}

/// The value tree `strategy` generates from `seed` (the same tree every time).
pub fn tree<S: Strategy>(strategy: &S, seed: u64) -> Result<S::Tree, super::FuzzError> {
    strategy
        .new_tree(&mut runner(seed))
        .map_err(|e| super::FuzzError::Generate {
            seed,
            reason: e.to_string(),
        })
}

/// proptest's shrinking loop over `tree`: simplify while `fails` keeps
/// failing, complicate back when a simplification passes, at most `budget`
/// evaluations. Returns the last failing value, its failure and the number
/// of simplifications accepted.
pub fn shrink<T: ValueTree, F>(
    tree: &mut T,
    first: F,
    budget: usize,
    fails: &mut dyn FnMut(&T::Value) -> Option<F>,
) -> (T::Value, F, usize) {
    let mut best = (tree.current(), first);
    let mut accepted = 0;
    if !tree.simplify() {
        return (best.0, best.1, 0);
    }
    for _ in 0..budget {
        let value = tree.current();
        match fails(&value) {
            Some(f) => {
                best = (value, f);
                accepted += 1;
                if !tree.simplify() {
                    break;
                }
            }
            None => {
                if !tree.complicate() {
                    break;
                }
            }
        }
    }
    (best.0, best.1, accepted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_same_seed_gives_the_same_case() {
        let s = (0u32..1000, proptest::collection::vec(any::<u8>(), 4));
        let a = tree(&s, 42).map(|t| t.current()).ok();
        let b = tree(&s, 42).map(|t| t.current()).ok();
        assert_eq!(a, b);
        let c = tree(&s, 43).map(|t| t.current()).ok();
        assert_ne!(a, c);
    }

    #[test]
    fn shrinking_finds_the_boundary() {
        let s = 0u32..10_000;
        let mut t = tree(&s, 7).unwrap();
        while t.current() < 100 {
            t = tree(&s, mix(t.current() as u64)).unwrap();
        }
        let (v, _, steps) = shrink(&mut t, (), 1000, &mut |v: &u32| (*v >= 37).then_some(()));
        assert_eq!(v, 37);
        assert!(steps > 0);
    }

    #[test]
    fn case_seeds_differ_by_invariant_and_index() {
        assert_ne!(case_seed(1, "bucket", 0), case_seed(1, "history", 0));
        assert_ne!(case_seed(1, "bucket", 0), case_seed(1, "bucket", 1));
        assert_eq!(case_seed(9, "bucket", 3), case_seed(9, "bucket", 3));
    }
}
