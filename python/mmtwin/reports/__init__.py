"""Text and plot reports built from engine results."""
