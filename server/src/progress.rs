//! A one-line progress bar on stderr, redrawn with a carriage return; silent when stderr is
//! not a terminal (pipes, files, tests).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Bar width in characters.
const WIDTH: usize = 30;
/// Redraw at most this often.
const REDRAW: Duration = Duration::from_millis(100);

/// Progress through a known number of steps.
pub(crate) struct Progress {
    total: u64,
    enabled: bool,
    start: Instant,
    last_draw: Option<Instant>,
}

impl Progress {
    /// A bar for `total` steps, drawn only when stderr is a terminal.
    pub(crate) fn new(total: u64) -> Progress {
        Progress {
            total: total.max(1),
            enabled: std::io::stderr().is_terminal(),
            start: Instant::now(),
            last_draw: None,
        }
    }

    /// Reports that `done` steps are finished.
    pub(crate) fn update(&mut self, done: u64) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        if self
            .last_draw
            .is_some_and(|t| now.duration_since(t) < REDRAW)
            && done < self.total
        {
            return;
        }
        self.last_draw = Some(now);
        let fraction = done.min(self.total) as f64 / self.total as f64;
        let filled = (fraction * WIDTH as f64).round() as usize;
        let elapsed = self.start.elapsed().as_secs_f64();
        let eta = if done > 0 {
            elapsed * (self.total - done.min(self.total)) as f64 / done as f64
        } else {
            0.0
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] {:>3.0}%  tick {done}/{}  {elapsed:.1} s, {eta:.1} s left ",
            "#".repeat(filled),
            ".".repeat(WIDTH - filled),
            fraction * 100.0,
            self.total,
        );
        let _ = err.flush();
    }

    /// Erases the bar.
    pub(crate) fn finish(&mut self) {
        if self.enabled && self.last_draw.is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{}\r", " ".repeat(WIDTH + 60));
            let _ = err.flush();
        }
    }
}
