//! No input makes the parser panic: random buffers, and the real archives with random bytes
//! changed, inserted and removed, and cut anywhere.

use pg_dump_archive::Archive;

/// xorshift64: reproducible without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn fixtures() -> Vec<Vec<u8>> {
    ["schema-15.dump", "schema-18.dump"]
        .iter()
        .map(|f| {
            std::fs::read(format!("{}/tests/fixtures/{f}", env!("CARGO_MANIFEST_DIR"))).unwrap()
        })
        .collect()
}

#[test]
fn random_buffers_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let len = rng.below(200);
        let mut buf: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        if rng.below(2) == 0 && buf.len() >= 6 {
            buf[..5].copy_from_slice(b"PGDMP");
            buf[5] = 1;
        }
        let _ = Archive::parse(&buf);
    }
}

#[test]
fn mutated_archives_never_panic() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for real in fixtures() {
        for cut in 0..=real.len() {
            let _ = Archive::parse(&real[..cut]);
        }
        for _ in 0..20_000 {
            let mut bytes = real.clone();
            for _ in 0..=rng.below(4) {
                let at = rng.below(bytes.len());
                match rng.below(4) {
                    0 => bytes[at] = rng.next() as u8,
                    1 => bytes[at] ^= 1 << rng.below(8),
                    2 => bytes.insert(at, rng.next() as u8),
                    _ => {
                        bytes.remove(at);
                    }
                }
            }
            if let Ok(a) = Archive::parse(&bytes) {
                assert!(a.entries.iter().all(|e| e.id > 0));
            }
        }
    }
}
