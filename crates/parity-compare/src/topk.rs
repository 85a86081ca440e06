//! The K worst elements of a range, kept sorted, and the floor a new one
//! must beat (one compare rejects almost every element).

/// One element worth reporting: flat index and both values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Hit {
    pub flat: usize,
    pub actual: f64,
    pub expected: f64,
    /// The ranking key (abs diff or allclose excess).
    pub score: f64,
}

/// The K largest hits by score, ties broken by the lower flat index, kept sorted.
///
/// Hits must be offered in increasing flat order (true within a chunk, and
/// when merging chunks in order): then a hit that ties the current K-th
/// score can never beat it, which lets the fast path reject with one compare.
#[derive(Clone, Debug)]
pub(crate) struct TopK {
    pub k: usize,
    pub items: Vec<Hit>,
    /// Score a new hit must exceed: the K-th score once full, -inf before (+inf when K = 0).
    floor: f64,
}

impl TopK {
    pub fn new(k: usize) -> Self {
        let floor = if k == 0 {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
        TopK {
            k,
            items: Vec::new(),
            floor,
        }
    }

    #[inline(always)]
    pub fn offer(&mut self, h: Hit) {
        // Fast reject: most elements are not among the worst K.
        if h.score <= self.floor {
            return;
        }
        self.insert(h);
    }

    /// Score a new hit must exceed to enter the list.
    #[inline(always)]
    pub fn floor(&self) -> f64 {
        self.floor
    }

    #[inline(never)]
    fn insert(&mut self, h: Hit) {
        let pos = self
            .items
            .iter()
            .position(|x| beats(&h, x))
            .unwrap_or(self.items.len());
        self.items.insert(pos, h);
        self.items.truncate(self.k);
        if self.items.len() == self.k {
            self.floor = self.items.last().map_or(f64::INFINITY, |x| x.score);
        }
    }
}

#[inline(always)]
fn beats(a: &Hit, b: &Hit) -> bool {
    a.score > b.score || (a.score == b.score && a.flat < b.flat)
}
