//! The lexer and parser of the label-selector query-string syntax.
//!
//! The grammar and the error cases follow Kubernetes' `labels.Parse`: words end at whitespace or
//! at one of `=!(),<>`; `in` and `notin` are keywords only where an operator is expected; a value
//! list `()` holds the empty value, and empty entries in a list (`(,a)`) are empty values.

use std::collections::BTreeSet;

use super::{Error, Operator, Requirement, Result};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Identifier(String),
    In,
    NotIn,
    Comma,
    OpenParen,
    CloseParen,
    /// `!`
    Not,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    End,
}

impl Token {
    /// The text of the token, for error messages.
    fn literal(&self) -> &str {
        match self {
            Self::Identifier(word) => word,
            Self::In => "in",
            Self::NotIn => "notin",
            Self::Comma => ",",
            Self::OpenParen => "(",
            Self::CloseParen => ")",
            Self::Not => "!",
            Self::Equals => "=",
            Self::DoubleEquals => "==",
            Self::NotEquals => "!=",
            Self::GreaterThan => ">",
            Self::LessThan => "<",
            Self::End => "",
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn is_whitespace(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn lex(query: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut rest = query;
    loop {
        rest = rest.trim_start_matches(is_whitespace);
        let Some(c) = rest.chars().next() else {
            tokens.push(Token::End);
            return tokens;
        };
        if is_special(c) {
            let (token, len) = match (c, rest[1..].chars().next()) {
                ('!', Some('=')) => (Token::NotEquals, 2),
                ('=', Some('=')) => (Token::DoubleEquals, 2),
                ('!', _) => (Token::Not, 1),
                ('=', _) => (Token::Equals, 1),
                ('(', _) => (Token::OpenParen, 1),
                (')', _) => (Token::CloseParen, 1),
                (',', _) => (Token::Comma, 1),
                ('>', _) => (Token::GreaterThan, 1),
                _ => (Token::LessThan, 1),
            };
            tokens.push(token);
            rest = &rest[len..];
        } else {
            let end = rest
                .find(|c| is_special(c) || is_whitespace(c))
                .unwrap_or(rest.len());
            let word = &rest[..end];
            tokens.push(match word {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Identifier(word.to_owned()),
            });
            rest = &rest[end..];
        }
    }
}

/// Where a token is read: in `Values`, the keywords `in` and `notin` are plain words.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    Values,
    Operator,
}

struct Parser {
    tokens: Vec<Token>,
    position: usize,
}

fn syntax_error(found: &Token, expected: &'static str) -> Error {
    Error::ParseQuery {
        found: found.literal().to_owned(),
        expected,
    }
}

impl Parser {
    fn token_at(&self, position: usize, context: Context) -> Token {
        let token = self.tokens.get(position).cloned().unwrap_or(Token::End);
        match token {
            Token::In | Token::NotIn if context == Context::Values => {
                Token::Identifier(token.literal().to_owned())
            }
            token => token,
        }
    }

    fn lookahead(&self, context: Context) -> Token {
        self.token_at(self.position, context)
    }

    fn consume(&mut self, context: Context) -> Token {
        let token = self.token_at(self.position, context);
        self.position += 1;
        token
    }

    fn parse(&mut self) -> Result<Vec<Requirement>> {
        let mut requirements = Vec::new();
        loop {
            match self.lookahead(Context::Values) {
                Token::Identifier(_) | Token::Not => {
                    requirements.push(self.requirement()?);
                    match self.consume(Context::Values) {
                        Token::End => return Ok(requirements),
                        Token::Comma => match self.lookahead(Context::Values) {
                            Token::Identifier(_) | Token::Not => {}
                            other => return Err(syntax_error(&other, "identifier after ','")),
                        },
                        other => return Err(syntax_error(&other, "',' or 'end of string'")),
                    }
                }
                Token::End => return Ok(requirements),
                other => return Err(syntax_error(&other, "!, identifier, or 'end of string'")),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement> {
        let (key, operator) = self.key_and_inferred_operator()?;
        if let Some(operator) = operator {
            return Requirement::new(&key, operator, Vec::new());
        }
        let operator = self.operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_list()?,
            _ => self.exact_value()?,
        };
        Requirement::new(&key, operator, values.into_iter().collect())
    }

    /// The key, and `Exists`/`DoesNotExist` when the requirement ends after it.
    fn key_and_inferred_operator(&mut self) -> Result<(String, Option<Operator>)> {
        let mut token = self.consume(Context::Values);
        let negated = token == Token::Not;
        if negated {
            token = self.consume(Context::Values);
        }
        let Token::Identifier(key) = token else {
            return Err(syntax_error(&token, "identifier"));
        };
        if let Some(reason) = super::validate::key_problem(&key) {
            return Err(Error::ValidateKey { key, reason });
        }
        if negated {
            return Ok((key, Some(Operator::DoesNotExist)));
        }
        match self.lookahead(Context::Values) {
            Token::End | Token::Comma => Ok((key, Some(Operator::Exists))),
            _ => Ok((key, None)),
        }
    }

    fn operator(&mut self) -> Result<Operator> {
        match self.consume(Context::Operator) {
            Token::In => Ok(Operator::In),
            Token::NotIn => Ok(Operator::NotIn),
            Token::Equals => Ok(Operator::Equals),
            Token::DoubleEquals => Ok(Operator::DoubleEquals),
            Token::NotEquals => Ok(Operator::NotEquals),
            Token::GreaterThan => Ok(Operator::GreaterThan),
            Token::LessThan => Ok(Operator::LessThan),
            other => Err(syntax_error(&other, "one of [!=, <, =, ==, >, in, notin]")),
        }
    }

    /// `( v1, v2, … )`
    fn value_list(&mut self) -> Result<BTreeSet<String>> {
        let open = self.consume(Context::Values);
        if open != Token::OpenParen {
            return Err(syntax_error(&open, "'('"));
        }
        match self.lookahead(Context::Values) {
            Token::Identifier(_) | Token::Comma => {
                let values = self.identifiers()?;
                let close = self.consume(Context::Values);
                if close != Token::CloseParen {
                    return Err(syntax_error(&close, "')'"));
                }
                Ok(values)
            }
            Token::CloseParen => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            other => Err(syntax_error(&other, "',', ')' or identifier")),
        }
    }

    /// The entries of a value list, up to (not including) its `)`.
    fn identifiers(&mut self) -> Result<BTreeSet<String>> {
        let mut values = BTreeSet::new();
        loop {
            match self.consume(Context::Values) {
                Token::Identifier(value) => {
                    values.insert(value);
                    match self.lookahead(Context::Values) {
                        Token::Comma => {}
                        Token::CloseParen => return Ok(values),
                        other => return Err(syntax_error(&other, "',' or ')'")),
                    }
                }
                Token::Comma => {
                    if values.is_empty() {
                        values.insert(String::new());
                    }
                    match self.lookahead(Context::Values) {
                        Token::CloseParen => {
                            values.insert(String::new());
                            return Ok(values);
                        }
                        Token::Comma => {
                            self.consume(Context::Values);
                            values.insert(String::new());
                        }
                        _ => {}
                    }
                }
                other => return Err(syntax_error(&other, "',', or identifier")),
            }
        }
    }

    /// The one value after `=`, `==`, `!=`, `>` or `<`; nothing there means the empty value.
    fn exact_value(&mut self) -> Result<BTreeSet<String>> {
        if matches!(self.lookahead(Context::Values), Token::End | Token::Comma) {
            return Ok(BTreeSet::from([String::new()]));
        }
        match self.consume(Context::Values) {
            Token::Identifier(value) => Ok(BTreeSet::from([value])),
            other => Err(syntax_error(&other, "identifier")),
        }
    }
}

/// The requirements of a query string, in the order written.
pub(super) fn parse(query: &str) -> Result<Vec<Requirement>> {
    Parser {
        tokens: lex(query),
        position: 0,
    }
    .parse()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::Selector;
    use super::*;

    fn parsed(query: &str) -> String {
        Selector::parse(query).map_or_else(|e| format!("error: {e}"), |s| s.to_string())
    }

    #[test]
    fn parses_every_form() {
        assert_eq!(parsed(""), "");
        assert_eq!(parsed("   "), "");
        assert_eq!(parsed("a"), "a");
        assert_eq!(parsed("!a"), "!a");
        assert_eq!(parsed("a=b"), "a=b");
        assert_eq!(parsed("a==b"), "a==b");
        assert_eq!(parsed("a!=b"), "a!=b");
        assert_eq!(parsed("a in (b,c)"), "a in (b,c)");
        assert_eq!(parsed("a notin (c, b, b)"), "a notin (b,c)");
        assert_eq!(parsed("a>1"), "a>1");
        assert_eq!(parsed("a<1"), "a<1");
        assert_eq!(parsed("x=a,y!=b,z in (c),!w,v"), "v,!w,x=a,y!=b,z in (c)");
        assert_eq!(parsed(" a = b , c "), "a=b,c");
        assert_eq!(parsed("example.com/app=web"), "example.com/app=web");
    }

    #[test]
    fn empty_values() {
        assert_eq!(parsed("a="), "a=");
        assert_eq!(parsed("a=,b"), "a=,b");
        assert_eq!(parsed("a in ()"), "a in ()");
        assert_eq!(parsed("a in (,b)"), "a in (,b)");
        assert_eq!(parsed("a in (b,)"), "a in (,b)");
        assert_eq!(parsed("a in (b,,c)"), "a in (,b,c)");
    }

    #[test]
    fn keywords_are_words_outside_operators() {
        assert_eq!(parsed("in in (notin)"), "in in (notin)");
        assert_eq!(parsed("notin"), "notin");
    }

    #[test]
    fn rejects_bad_syntax() {
        for bad in [
            "a b",
            "a=b c",
            "a,",
            ",a",
            "!a=b",
            "a in b",
            "a in (b",
            "a in (b c)",
            "a=(b)",
            "a in (b))",
            "=b",
            "a!b",
            "a>b",
            "a b=c",
            "a=b=c",
        ] {
            assert!(Selector::parse(bad).is_err(), "{bad:?} should fail");
        }
        assert_eq!(
            Selector::parse("a,").unwrap_err(),
            Error::ParseQuery {
                found: String::new(),
                expected: "identifier after ','"
            }
        );
        assert!(matches!(
            Selector::parse("bad key!=x"),
            Err(Error::ParseQuery { .. })
        ));
        assert!(matches!(
            Selector::parse("-bad=x"),
            Err(Error::ValidateKey { .. })
        ));
        assert!(matches!(
            Selector::parse("a=-x"),
            Err(Error::ValidateValue { .. })
        ));
    }

    #[test]
    fn parsed_selectors_match() {
        let selector = Selector::parse("env in (prod,staging),tier!=db,!canary").unwrap();
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        assert!(selector.matches(&labels(&[("env", "prod")])));
        assert!(selector.matches(&labels(&[("env", "staging"), ("tier", "web")])));
        assert!(!selector.matches(&labels(&[("env", "prod"), ("tier", "db")])));
        assert!(!selector.matches(&labels(&[("env", "prod"), ("canary", "")])));
        assert!(!selector.matches(&labels(&[("env", "dev")])));
    }

    #[test]
    fn display_round_trips() {
        for query in ["a=b,c notin (d,e),!f", "a in (,x)", "k>10,l<2", "z==1"] {
            let selector = Selector::parse(query).unwrap();
            assert_eq!(Selector::parse(&selector.to_string()).unwrap(), selector);
        }
    }
}
