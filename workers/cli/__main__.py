from __future__ import annotations

from workers.cli import main

if __name__ == "__main__":
    main()
