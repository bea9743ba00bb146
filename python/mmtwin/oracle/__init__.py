"""mmtwin oracle: a real Linux kernel in a VM beside the twin (docs/oracle.md)."""
