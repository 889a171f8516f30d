"""pytest's hooks of a contract run: the options and the spec at configure time, collection,
the fixtures, the controller's session, xdist workers, the garbage collector, the run's
launcher and when it is closed."""
