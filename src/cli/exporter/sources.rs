//! The two sources of one exposition: kbxscope's own file-event families
//! and the Prometheus exporter's recorder.

use std::sync::Arc;

use metrics_exporter_prometheus::PrometheusHandle;

use kbxscope::telemetry::IoMetrics;

/// Both sources of the exposition.
#[derive(Clone)]
pub(super) struct Sources {
    exporter: PrometheusHandle,
    io: Arc<IoMetrics>,
}

impl Sources {
    /// kbxscope's families and the exporter's recorder.
    pub(super) fn new(exporter: PrometheusHandle, io: Arc<IoMetrics>) -> Self {
        Self { exporter, io }
    }

    /// kbxscope's own families (the observer the I/O layer feeds).
    pub(super) fn io(&self) -> Arc<IoMetrics> {
        self.io.clone()
    }

    /// The exposition: the recorder's families, then kbxscope's.
    pub(super) fn render(&self) -> String {
        let mut text = self.exporter.render();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text + &self.io.render()
    }
}
