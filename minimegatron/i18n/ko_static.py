"""정적 읽기(classroom/static_read.py)의 한국어 문구: SUSPECT(의심) 판정.

en_static.py와 같은 키, 같은 {필드}입니다 (tests/test_static_read.py).
"""

MESSAGES = {
    "grader.result.SUSPECT": "의심",
    "static.suspect": "의심: 블록을 실행하지 않았습니다. 실행 전에 읽어 보니 연습 문제에 필요 "
                      "없는 것이 {count}개 있습니다. 선생님이 각 줄을 읽어 보세요:",
    "static.line": "{path}:{line}: {code}\n  <- {reason}",
    "static.more": "... 그리고 {count}줄 더",
    "static.import": "{name}을 import합니다: 블록이 import할 수 있는 범위(numpy, math 같은 "
                     "몇몇 순수 도우미, 패키지의 본문: docs/teaching.md) 밖입니다",
    "static.reaches": "{name}에 닿습니다: 블록이 쓸 수 있는 범위 밖입니다 (인터프리터, MPI "
                      "자체, 채점기의 코드)",
    "static.builtin": "{name}을 씁니다: 파일을 읽거나 채점기가 보지 못하는 코드를 "
                      "실행합니다",
    "static.dunder": "{name}을 씁니다: 던더(dunder) 이름, 곧 파이썬 내부 장치입니다",
    "static.private": "{name}을 씁니다: 다른 객체의 비공개(private) 멤버입니다 (블록에 "
                      "필요한 비공개 접근은 self._x뿐입니다)",
    "static.module": ".{name}에 닿습니다: 연습 문제에 필요 없는 모듈입니다",
    "static.frame": "{name}에 닿습니다: 인터프리터의 프레임이나 코드 객체입니다",
    "static.spawn": "{name}을 씁니다: 작업 밖의 프로세스를 시작하거나 연결합니다",
    "static.file_io": "{name}을 씁니다: 파일이나 메모리를 직접 읽고 씁니다",
    "static.numpy": "{name}을 씁니다: 블록이 쓸 수 있는 NumPy 이름(배열 연산, shape, "
                    "reduction, 곱: 파일, pickle, 원시 메모리, 코드 로딩은 없음, "
                    "docs/teaching.md) 밖입니다",
    "static.function_state": "{name}을 설정합니다: 블록이 만든 함수(lambda, 안쪽 def, "
                             "partial)에 붙인 속성은 직접 지어낸 객체입니다. 예: wait가 "
                             "아무것도 하지 않는 핸들",
    "static.trace": "{name}을 건드립니다: 트레이스(trace)와 집합 통신 검사는 채점기의 "
                    "증인이므로 블록이 끄거나 채울 수 없습니다",
    "static.env": "설정 {name}을 언급합니다: 채점기의 스위치는 블록의 것이 아닙니다",
    "static.handle": "{name}을 직접 만듭니다: 집합 통신의 핸들은 comm의 i* 함수가 "
                     "돌려줍니다",
    "static.class": "블록 안에서 클래스 {name}을 정의합니다: 연습 문제에는 필요 없고, "
                    "지어낸 객체가 패키지의 객체 행세를 할 수 있습니다",
    "static.global": "global {name}을 선언합니다: 블록이 모듈 수준 이름을 바꿉니다",
    "static.patch": "{name}을 바꿉니다: 함수가 소유하지 않은 것(모듈 또는 모듈 수준 "
                    "객체)입니다",
    "static.alias": "모듈 {name}을 값으로 넘깁니다 (정적 읽기는 모듈을 이름으로만 "
                    "따라갑니다)",
    "static.string": "문자열에 {name}이 들어 있습니다: 속성을 글자로 찾는 방법입니다",
    "static.escape": "블록보다 덜 들여쓴 문장({name}): 연습 문제의 함수를 벗어났습니다",
    "static.past_end": "블록의 끝 표시를 넘어 이어지는 코드({name})",
    "static.unread": "이 블록을 끝까지 읽지 못했습니다 ({name}). 직접 읽어 보세요",
}
