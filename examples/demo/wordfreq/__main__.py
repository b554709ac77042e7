from wordfreq.cli import main

raise SystemExit(main())
