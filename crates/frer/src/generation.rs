//! Sequence generation (IEEE 802.1CB 7.4.1): one counter per generation entry, shared by
//! every stream listed in it, wrapping at the sequence space.

/// A sequence generation function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SequenceGenerator {
    next: u16,
    /// frerCpsSeqGenResets (10.8.2).
    pub resets: u64,
}

impl SequenceGenerator {
    /// A generator starting at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// SequenceGenerationAlgorithm: the number for the next frame (… 65535, 0, 1 …).
    pub fn next_seq(&mut self) -> u16 {
        let s = self.next;
        self.next = self.next.wrapping_add(1);
        s
    }

    /// SequenceGenerationReset: back to 0, counted.
    pub fn reset(&mut self) {
        self.next = 0;
        self.resets += 1;
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn counts_and_wraps() {
        let mut g = SequenceGenerator::new();
        assert_eq!((g.next_seq(), g.next_seq()), (0, 1));
        for _ in 2..65535 {
            g.next_seq();
        }
        assert_eq!(g.next_seq(), 65535);
        assert_eq!(g.next_seq(), 0, "wraps at 2^16");
        g.reset();
        assert_eq!((g.next_seq(), g.resets), (0, 1));
    }
}
