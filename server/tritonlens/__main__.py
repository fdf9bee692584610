import sys

from .importpath import drop_working_directory

drop_working_directory()  # before the CLI imports anything: `-m` put the working directory first on sys.path

from .cli import main  # noqa: E402

sys.exit(main())
