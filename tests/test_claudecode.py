"""Issue 17: Claude Code's own names for things (claude_chats/claudecode.py), as 2.1.332 has them."""

import os
import subprocess

import pytest

from claude_chats import paths
from claude_chats.claudecode import project_folder_name, resume_command, resume_line, transcript_path


@pytest.mark.parametrize("project, folder", [
    ("/tmp/exp/run1/proj", "-tmp-exp-run1-proj"),
    ("/home/me/my_project.v2/ü", "-home-me-my-project-v2--"),
    # what Claude Code 2.1.332 named the folder of this path (a run of the real CLI): cut and hashed
    ("/tmp/exp/run1/p_" + "x" * 120 + "/" + "y" * 120,
     "-tmp-exp-run1-p-" + "x" * 120 + "-" + "y" * 63 + "-k7uiuo"),
])
def test_the_project_folder_is_the_one_claude_code_uses(project, folder):
    assert project_folder_name(project) == folder


def test_the_resume_line_resumes_from_the_project_and_restores_first_when_the_transcript_is_gone():
    assert resume_command("abc", "/work/my proj") == "cd '/work/my proj' && claude --resume abc"
    assert resume_command("abc:agent-x1") == "claude --resume abc"
    assert resume_line("abc", "/work/proj") == "chats restore abc && cd /work/proj && claude --resume abc"
    path = transcript_path("abc:agent-x1", "/work/proj")
    assert path == os.path.join(paths.claude_projects_dir(), "-work-proj", "abc.jsonl")
    os.makedirs(os.path.dirname(path))
    open(path, "w").close()
    assert resume_line("abc", "/work/proj") == "cd /work/proj && claude --resume abc"


def test_a_project_path_that_starts_with_a_dash_is_no_option_of_cd(tmp_path):
    """A relative path from a transcript or another machine's row ("-experiments/worktrees", one of the
    corpus's) made `cd -experiments/worktrees`, which cd reads as options; the line is run in a shell."""
    (tmp_path / "-rf x").mkdir()
    line = resume_command("abc", "-rf x").replace("claude --resume abc", "pwd")
    assert line.startswith("cd -- ")
    res = subprocess.run(["sh", "-c", line], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 0 and res.stdout.strip() == str(tmp_path / "-rf x"), res
