"""``python -m mmtwin`` is the same as the ``mmtwin`` command."""

from mmtwin.cli import main

if __name__ == "__main__":
    main()
