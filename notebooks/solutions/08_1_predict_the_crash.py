# 35 settles, slices of 10. The first driver commits three folds (30 rows) and trims two: 15 entries stay,
# 10 of them already on the floor. The second driver first finishes that trim (5 left), reads the last 5 and
# dies inside its SQLite transaction: nothing of that fold reached the disk, the floor still holds 30. The
# third driver trims nothing new and folds the 5 after the cursor: 35, each once.
predict_the_crash = {
    "stream, when the second driver is killed": 5,
    "floor, when the second driver is killed": 30,
    "floor, once the third driver is done": 35,
}
