"""memory, timeline 명령의 표와 줄 (tools/memory*.py, tools/scaling.py, commands/memory.py,
commands/timeline.py). 키와 {필드}는 en_reports.py와 같습니다."""

MESSAGES = {
}
