from __future__ import annotations

from workers.cli import main

if __name__ == "__main__":  # imported (e.g. by pkgutil.walk_packages), it runs nothing
    main()
