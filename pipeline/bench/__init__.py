"""``memfold bench``: synthetic stores, timed paths in fresh processes, and the floors they are held to."""
