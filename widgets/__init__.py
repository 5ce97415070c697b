"""echomq_widgets — the course widgets (lifecycle stepper, flow composer, set view, counter plot)."""
