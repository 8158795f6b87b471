"""The node agent: runs the pods bound to a real node as host processes."""
