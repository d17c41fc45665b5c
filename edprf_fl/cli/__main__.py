from ._main import main

raise SystemExit(main())
