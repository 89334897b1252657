//! The ranking's order, sorted with few branches on the ranks: a radix sort of the items'
//! rank keys by the top 16 bits of the rank (two stable passes of a byte), then an
//! insertion sort that puts right the few keys whose ranks share those bits.
//!
//! The keys are written in item order (their lower half is the item's number, rising), and
//! the passes are stable, so the insertion sort finds ties in item order: the result is the
//! order of the whole keys, which [`protocol::build_snapshot`] goes by. A comparison sort
//! of a snapshot's couple of hundred keys mispredicts most of its comparisons (the ranks of
//! a moving crowd are in no order); here the branches are the loops' own, and the
//! insertion sort's, which moves a key in a few of them.

/// Sorts `keys`, written with their lower halves rising, by their upper halves, keeping
/// ties in the order written: the order of the whole keys. `spare` is working memory.
pub(super) fn sort_by_rank(keys: &mut [u64], spare: &mut Vec<u64>) {
    let len = keys.len();
    if len < 2 {
        return;
    }
    if spare.len() < len {
        spare.resize(len, 0);
    }
    let spare = &mut spare[..len];
    // By the rank's top 16 bits (its sign, exponent and first 7 bits of mantissa), in two
    // stable passes of a byte: keys then differ in order only where two ranks are within
    // one part in 128 of each other, which an insertion sort then puts right.
    let mut starts = [[0u32; 256]; 2];
    for &key in keys.iter() {
        starts[0][(key >> 48) as usize & 0xff] += 1;
        starts[1][(key >> 56) as usize] += 1;
    }
    for counts in starts.iter_mut() {
        let mut sum = 0;
        for count in counts.iter_mut() {
            let here = *count;
            *count = sum;
            sum += here;
        }
    }
    for &key in keys.iter() {
        let digit = (key >> 48) as usize & 0xff;
        let at = starts[0][digit] as usize;
        starts[0][digit] += 1;
        spare[at] = key;
    }
    for &key in spare.iter() {
        let digit = (key >> 56) as usize;
        let at = starts[1][digit] as usize;
        starts[1][digit] += 1;
        keys[at] = key;
    }
    // Ranks that mostly share their top bits (a contrived crowd) would make the insertion
    // sort quadratic: past eight moves a key, a comparison sort finishes the job. (Counted
    // in the moves, which are few, not for every key.)
    let mut moves_left = 8 * len;
    for i in 1..len {
        let key = keys[i];
        let mut at = i;
        while at > 0 && keys[at - 1] > key {
            keys[at] = keys[at - 1];
            at -= 1;
            moves_left -= 1;
            if moves_left == 0 {
                keys[at] = key;
                keys.sort_unstable();
                return;
            }
        }
        keys[at] = key;
    }
}

#[cfg(test)]
mod tests {
    use super::sort_by_rank;

    /// The next number of a xorshift sequence.
    fn xorshift(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// The order of the whole keys, for keys written with their lower halves rising: ranks
    /// random, ranks from a few values (ties), ranks all the same, lengths from 0 to 700.
    #[test]
    fn sorts_like_the_whole_keys() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || xorshift(&mut seed);
        let mut spare = Vec::new();
        for len in [0, 1, 2, 3, 31, 64, 180, 257, 700] {
            for spread in [u64::MAX, 0xff, 0xffff_0000, 0xff00_00ff, 0x8000_0001, 0] {
                let mut keys: Vec<u64> = (0..len as u64)
                    .map(|i| ((next() & spread) & 0xffff_ffff) << 32 | i)
                    .collect();
                let mut want = keys.clone();
                want.sort_unstable();
                sort_by_rank(&mut keys, &mut spare);
                assert_eq!(keys, want, "{len} keys, ranks within {spread:#x}");
            }
        }
    }

    /// The same for keys of ranks as a snapshot has them: the error over the distance,
    /// spread over many octaves, with some first (minus infinity, the own character and
    /// leaves), some equal, some that are zero (no error) and, should a position not be a
    /// number, some that are not numbers either.
    #[test]
    fn sorts_the_ranks_of_a_snapshot() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = || xorshift(&mut seed);
        let mut spare = Vec::new();
        for len in [2, 5, 190, 400] {
            for case in [0, 1, 2, 3] {
                let mut keys: Vec<u64> = (0..len as u32)
                    .map(|i| {
                        let roll = next();
                        let error2 = (roll % 1000) as f32 * 0.37;
                        let distance2 = (roll >> 20 & 0xffff) as f32 * 0.05;
                        let rank = match (case, roll >> 60) {
                            (_, 0) => f32::NEG_INFINITY,
                            (1, 1) => -0.0,
                            (2, 1..=3) => -1.5,
                            (3, 1) => f32::NAN,
                            (3, 2) => -f32::NAN,
                            _ => -error2 / (distance2 + 1.0),
                        };
                        protocol::view::rank_key(rank, i)
                    })
                    .collect();
                let mut want = keys.clone();
                want.sort_unstable();
                sort_by_rank(&mut keys, &mut spare);
                assert_eq!(keys, want, "{len} keys, case {case}");
            }
        }
    }
}
