//! A progress bar on stderr, hidden when stderr is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Progress of a multi-step job.
pub struct Bar(ProgressBar);

impl Bar {
    /// A bar drawn on stderr (if it is a terminal): step, bar, done/total.
    pub fn new() -> Self {
        Self::with_template("{msg:26} [{bar:40}] {pos}/{len} {elapsed}")
    }

    /// A bar for work whose steps take about equally long: the message
    /// says where it is, the bar how far, and an estimate of the time left.
    pub fn with_eta() -> Self {
        Self::with_template("{msg:34} [{bar:24}] {elapsed} elapsed, about {eta} left")
    }

    fn with_template(template: &str) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        Self(bar)
    }

    /// Show `done` of `total` in `step`.
    pub fn update(&self, step: &str, done: usize, total: usize) {
        if self.0.message() != step {
            self.0.set_message(step.to_string());
        }
        self.0.set_length(total as u64);
        self.0.set_position(done as u64);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
