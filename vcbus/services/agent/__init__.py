"""The node agent (SPEC A14): runs the pods bound to a real node as host processes."""
