"""The grader's parts, used by ``tools/assignments.py`` (a tool, not part of the ``ncbook`` package).

* :mod:`grading.edition`: the student edition of the package (the answers absent) and what it removes;
* :mod:`grading.sandbox`: the bubblewrap sandboxes, their enforced limits (cgroups) and their protocol;
* :mod:`grading.submissions`: reading a folder of submissions as data (one row per entry, whatever it is);
* :mod:`grading.review`: what an instructor should read (static flags, similarity to published code);
* :mod:`grading.gradebook`: roster, points, merge of written points, gradebook exports, feedback pages.
"""
